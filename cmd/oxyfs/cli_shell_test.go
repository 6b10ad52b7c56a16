package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envTestMain makes the test binary run as oxyfs (TestMain): the shell
// tests put it on PATH as "oxyfs", as the completion script calls it.
const envTestMain = "OXYFS_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envTestMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// oxyfsOnPath links the test binary as DIR/oxyfs and returns the
// environment that finds it first on PATH and makes it oxyfs.
func oxyfsOnPath(t *testing.T) (dir string, env []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "oxyfs")); err != nil {
		t.Fatal(err)
	}
	return dir, append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), envTestMain+"=1")
}

// TestMisspelledFlagSuggested: a misspelled flag is a usage error (exit 2)
// naming the flag the user most likely meant; so is a long flag given with
// one dash, and a misspelled shell for completion.
//
// testwatch: mounts nothing (flags and usage only).
func TestMisspelledFlagSuggested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", "--raed-only", "s", "m"}, "oxyfs mount: unknown flag: --raed-only; did you mean --read-only?\n"},
		{[]string{"fold", "--dyr-run", "s"}, "oxyfs fold: unknown flag: --dyr-run; did you mean --dry-run?\n"},
		{[]string{"ls", "-recursive", "s"}, "did you mean --recursive?\n"},
		{[]string{"serve", "--layuot=bucket", "s"}, "unknown flag: --layuot; did you mean --layout?\n"},
		{[]string{"completion", "bsh"}, `oxyfs: completion: no shell "bsh"; did you mean "bash"?` + "\n"},
	} {
		out, errOut, code := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oxyfs %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	// Nothing near: no suggestion.
	_, errOut, _ := runCLI(t, "gc", "--zzzzzzzz", "s")
	if strings.Contains(errOut, "did you mean") {
		t.Errorf("gc --zzzzzzzz suggested something: %q", errOut)
	}
}

// TestBashCompletion sources `oxyfs completion bash` in bash, as a user's
// ~/.bashrc does, and completes a command name, a flag name and a flag's
// value through its completion function, which runs oxyfs (here the test
// binary on PATH) for the answers. The function needs bash-completion's
// _get_comp_words_by_ref: the real one when installed, else the minimum
// of it defined here.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to test the completion script:", err)
	}
	dir, env := oxyfsOnPath(t)
	out, errOut, code := runCLI(t, "completion", "bash")
	if code != 0 || errOut != "" {
		t.Fatalf("completion bash: exit %d: %s", code, errOut)
	}
	script := filepath.Join(dir, "oxyfs.bash")
	if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	const harness = `
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
	source /usr/share/bash-completion/bash_completion
else
	_get_comp_words_by_ref() {
		words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
	}
fi
source "$1"
complete -p oxyfs
comp() {
	COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	__start_oxyfs oxyfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
	echo "== $*"
	printf '%s\n' "${COMPREPLY[@]}"
}
comp oxyfs mou
comp oxyfs mount --raed
comp oxyfs mount --read-o
comp oxyfs ls --layout di
comp oxyfs ch
comp oxyfs wat
comp oxyfs diff --last
comp oxyfs watch --kinds se
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", harness, "bash", script)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, b)
	}
	got := string(b)
	for _, want := range []string{
		"complete -o default -F __start_oxyfs oxyfs\n",
		"== oxyfs mou\nmount\n",
		"== oxyfs mount --raed\n\n== ", // nothing starts so
		"== oxyfs mount --read-o\n--read-only\n",
		"== oxyfs ls --layout di\ndirectory\n",
		"== oxyfs ch\ncheck\n",
		"== oxyfs wat\nwatch\n",
		"== oxyfs diff --last\n--last-fold\n",
		"== oxyfs watch --kinds se\nseal\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("bash completion lacks %q:\n%s", want, got)
		}
	}
}

// TestManPages: `oxyfs man DIR` writes oxyfs.1 and a page per command
// (oxyfs-mount.1, …; none for the hidden man), which man(1) renders with
// the command's summary and flags.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if _, errOut, code := runCLI(t, "man", dir); code != 0 {
		t.Fatalf("man %s: exit %d: %s", dir, code, errOut)
	}
	for _, name := range commandNames() {
		_, err := os.Stat(filepath.Join(dir, "oxyfs-"+name+".1"))
		if hidden := commands[name].hidden; hidden != os.IsNotExist(err) {
			t.Errorf("oxyfs-%s.1: %v (hidden %v)", name, err, hidden)
		}
	}
	for _, name := range []string{"oxyfs.1", "oxyfs-version.1", "oxyfs-completion-bash.1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	render := func(page string) string {
		t.Helper()
		var cmd *exec.Cmd
		if man, err := exec.LookPath("man"); err == nil {
			cmd = exec.Command(man, "-l", "-P", "cat", page)
		} else if groff, err := exec.LookPath("groff"); err == nil {
			cmd = exec.Command(groff, "-man", "-Tutf8", page)
		} else {
			t.Fatal("neither man nor groff to render the pages")
		}
		cmd.Env = append(os.Environ(), "MANWIDTH=200", "MAN_KEEP_FORMATTING=0", "LC_ALL=C.UTF-8")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		// Strip overstrikes (bold and underline), should a formatter keep
		// them, and the justification's runs of spaces.
		s := string(b)
		for strings.Contains(s, "\b") {
			i := strings.Index(s, "\b")
			s = s[:i-1] + s[i+1:]
		}
		return strings.Join(strings.Fields(s), " ") // justified lines: one space apart
	}
	root := render(filepath.Join(dir, "oxyfs.1"))
	for _, want := range []string{"NAME", "oxyfs - the signatures and index entries", "Exit codes: 0 ok, 1 failed, 2 usage.", "oxyfs-mount(1)", "oxyfs-gc(1)", "oxyfs-watch(1)", "oxyfs-diff(1)"} {
		if !strings.Contains(root, want) {
			t.Errorf("oxyfs.1 rendered lacks %q:\n%s", want, root)
		}
	}
	mount := render(filepath.Join(dir, "oxyfs-mount.1"))
	want := []string{"oxyfs-mount - mount the store's entries", "oxyfs mount [STORE MOUNTPOINT]", "--read-only", "refuse every write (EROFS)", "-o, --options", "--layout=\"auto\"", "oxyfs(1)"}
	if strings.Contains(commands["mount"].summary, "Linux only") {
		want = want[:2]
	}
	for _, w := range want {
		if !strings.Contains(mount, w) {
			t.Errorf("oxyfs-mount.1 rendered lacks %q:\n%s", w, mount)
		}
	}
}
