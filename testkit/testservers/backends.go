package testservers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// backend describes how to run and talk to one kind of server.
type backend struct {
	kind   string
	binary string
	// provide builds or installs the pinned server program when it is
	// neither on PATH nor in OXYFS_TOOLS, and returns its path.
	provide func(ctx context.Context) (string, error)
	// needs names the programs that must be on PATH to run binary at all
	// (an interpreter).
	needs []string

	// persistLag is how long the server may hold acknowledged writes only
	// in memory. Kill waits this long before SIGKILL so that, as with a real
	// object store, everything acknowledged before Kill survives it.
	persistLag time.Duration

	makeDir      func() (string, error)
	args         func(s *Server) []string
	procEnv      func(s *Server) []string          // extra env for the server process
	env          func(s *Server) map[string]string // client env, set in this process too
	readyURL     func(s *Server) string
	bucketURL    func(s *Server, name string) string
	createBucket func(ctx context.Context, s *Server, name string) error
}

var backends = map[string]*backend{
	"s3":    s3Backend,
	"azure": azureBackend,
	"gcs":   gcsBackend,
}

// Default S3 credentials, used when AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// are not both set already.
const (
	s3DefaultAccessKey = "oxyfstest"
	s3DefaultSecretKey = "oxyfstestsecret"
	s3Region           = "us-east-1"
)

var s3Backend = &backend{
	kind:    "s3",
	binary:  "versitygw",
	provide: goTool("versitygw"), // go.mod: tool github.com/versity/versitygw/cmd/versitygw
	makeDir: xattrTempDir,
	// The posix backend keeps ETags and other metadata in xattrs. --nometa
	// must not be used: without metadata, conditional writes wrongly succeed.
	// --keep-alive: without it versitygw closes every connection after one
	// response, so each request of a test paid a new TCP handshake (a real S3
	// endpoint keeps connections alive; the lean GET path reuses them).
	args: func(s *Server) []string {
		return []string{"--port", s.addr, "--region", s3Region, "--keep-alive", "posix", s.dataDir}
	},
	procEnv: func(s *Server) []string {
		// Credentials through the environment keep them out of ps output.
		return []string{
			"ROOT_ACCESS_KEY_ID=" + s.Env["AWS_ACCESS_KEY_ID"],
			"ROOT_SECRET_ACCESS_KEY=" + s.Env["AWS_SECRET_ACCESS_KEY"],
		}
	},
	env: func(s *Server) map[string]string {
		ak, sk := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if ak == "" || sk == "" {
			ak, sk = s3DefaultAccessKey, s3DefaultSecretKey
		}
		region := os.Getenv("AWS_REGION")
		if region == "" {
			region = s3Region
		}
		return map[string]string{
			"AWS_ACCESS_KEY_ID":     ak,
			"AWS_SECRET_ACCESS_KEY": sk,
			"AWS_REGION":            region,
		}
	},
	readyURL: func(s *Server) string { return s.URL + "/" },
	bucketURL: func(s *Server, name string) string {
		return "s3://" + name + "?endpoint=" + s.URL + "&use_path_style=true&region=" + s3Region + "&disable_https=true"
	},
	createBucket: func(ctx context.Context, s *Server, name string) error {
		client := s3.New(s3.Options{
			Region:       s3Region,
			BaseEndpoint: aws.String(s.URL),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(s.Env["AWS_ACCESS_KEY_ID"], s.Env["AWS_SECRET_ACCESS_KEY"], ""),
		})
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return fmt.Errorf("s3 CreateBucket: %w", err)
		}
		return nil
	},
}

// Azurite's well-known development account.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

var azureBackend = &backend{
	kind:    "azure",
	binary:  "azurite-blob",
	provide: npmTool(azuritePkg, "azurite-blob"),
	needs:   []string{"node"}, // azurite-blob is a node script
	makeDir: plainTempDir("azure"),
	// Azurite keeps blob and extent metadata in LokiJS databases that are
	// saved to disk every 5 s (autosaveInterval: 5000, not configurable);
	// a SIGKILL loses whatever changed since the last save.
	persistLag: 6 * time.Second,
	args: func(s *Server) []string {
		return []string{
			"--blobHost", "127.0.0.1",
			"--blobPort", strconv.Itoa(s.port),
			"--location", s.dataDir,
			"--skipApiVersionCheck",
			"--disableTelemetry",
			"--loose",
		}
	},
	procEnv: func(s *Server) []string {
		if s.Env["AZURE_STORAGE_ACCOUNT"] == azuriteAccount && s.Env["AZURE_STORAGE_KEY"] == azuriteKey {
			return nil
		}
		return []string{"AZURITE_ACCOUNTS=" + s.Env["AZURE_STORAGE_ACCOUNT"] + ":" + s.Env["AZURE_STORAGE_KEY"]}
	},
	env: func(s *Server) map[string]string {
		acct, key := os.Getenv("AZURE_STORAGE_ACCOUNT"), os.Getenv("AZURE_STORAGE_KEY")
		if acct == "" || key == "" {
			acct, key = azuriteAccount, azuriteKey
		}
		return map[string]string{"AZURE_STORAGE_ACCOUNT": acct, "AZURE_STORAGE_KEY": key}
	},
	readyURL: func(s *Server) string { return s.URL + "/" },
	bucketURL: func(s *Server, name string) string {
		return "azblob://" + name + "?protocol=http&domain=" + s.addr + "&localemu=true&storage_account=" + s.Env["AZURE_STORAGE_ACCOUNT"]
	},
	createBucket: func(ctx context.Context, s *Server, name string) error {
		client, err := azureClient(s)
		if err != nil {
			return err
		}
		if _, err := client.CreateContainer(ctx, name, nil); err != nil {
			return fmt.Errorf("azblob CreateContainer: %w", err)
		}
		return nil
	},
}

// azureClient returns an azblob service client for the Azurite server s,
// authenticated with the account from s.Env.
func azureClient(s *Server) (*azblob.Client, error) {
	acct := s.Env["AZURE_STORAGE_ACCOUNT"]
	cred, err := azblob.NewSharedKeyCredential(acct, s.Env["AZURE_STORAGE_KEY"])
	if err != nil {
		return nil, fmt.Errorf("azblob shared key for %s: %w", acct, err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(s.URL+"/"+acct+"/", cred, nil)
	if err != nil {
		return nil, fmt.Errorf("azblob client for %s: %w", s.URL, err)
	}
	return client, nil
}

var gcsBackend = &backend{
	kind:    "gcs",
	binary:  "fake-gcs-server",
	provide: goTool("fake-gcs-server"), // go.mod: tool github.com/fsouza/fake-gcs-server
	makeDir: plainTempDir("gcs"),
	args: func(s *Server) []string {
		return []string{
			"-scheme", "http",
			"-host", "127.0.0.1",
			"-port", strconv.Itoa(s.port),
			"-backend", "filesystem",
			"-filesystem-root", s.dataDir,
			// Upload sessions hand out Location URLs built from these; they
			// must point back at this server, not storage.googleapis.com.
			"-public-host", s.addr,
			"-external-url", s.URL,
			"-log-level", "warn",
		}
	},
	procEnv: func(s *Server) []string { return nil },
	// The Go storage client (and so gcsblob) sends every request to
	// STORAGE_EMULATOR_HOST without credentials when it is set.
	env:       func(s *Server) map[string]string { return map[string]string{"STORAGE_EMULATOR_HOST": s.addr} },
	readyURL:  func(s *Server) string { return s.URL + "/storage/v1/b" },
	bucketURL: func(s *Server, name string) string { return "gs://" + name },
	createBucket: func(ctx context.Context, s *Server, name string) error {
		body, err := json.Marshal(map[string]string{"name": name})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/storage/v1/b?project=test", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("gcs create bucket: %w", err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("gcs create bucket: %s: %s", resp.Status, msg)
		}
		return nil
	},
}

func plainTempDir(kind string) func() (string, error) {
	return func() (string, error) { return os.MkdirTemp("", "oxyfs-testservers-"+kind+"-") }
}

// xattrTempDir makes a temp dir on a filesystem that supports user extended
// attributes, which versitygw's posix backend stores its metadata in. It tries
// $TMPDIR (or /tmp), then /var/tmp, then the user cache dir.
func xattrTempDir() (string, error) {
	bases := []string{os.TempDir(), "/var/tmp"}
	if d, err := os.UserCacheDir(); err == nil {
		bases = append(bases, d)
	}
	var errs []error
	for _, base := range bases {
		dir, err := os.MkdirTemp(base, "oxyfs-testservers-s3-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		probe := filepath.Join(dir, "xattr-probe")
		err = os.WriteFile(probe, nil, 0o644)
		if err == nil {
			err = setxattrProbe(probe)
			os.Remove(probe)
			if err == nil {
				return dir, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: no user xattr support: %w", base, err))
		os.RemoveAll(dir)
	}
	return "", fmt.Errorf("no temp dir with user xattr support (versitygw needs it): %v", errs)
}
