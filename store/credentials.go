package store

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go/logging"
)

// Credentials are looked for when a store is opened, before any request, so
// that a store without them fails with one line saying what to set instead
// of the SDK's chain of attempts (twice: the journal and the retired record
// are read at once), a stray "SDK ... WARN" line on stderr (S3) or a
// "Warning:" on stdout (GCS). The error wraps ErrNoCredentials; it names
// the variables, never their values.
//
//	s3     the AWS SDK's default chain (environment, shared config and
//	       credentials files, AWS_PROFILE or the URL's profile=, web
//	       identity, container credentials) with its logger off. EC2's
//	       instance metadata (IMDS) is asked only where it can answer: on
//	       EC2 (the DMI vendor "Amazon EC2", an "i-" asset tag or a Xen
//	       "ec2" UUID), with AWS_EC2_METADATA_SERVICE_ENDPOINT set, or with
//	       AWS_EC2_METADATA_DISABLED=false; AWS_EC2_METADATA_DISABLED=true
//	       turns it off everywhere. Elsewhere it would wait for a server
//	       that is not there. anonymous=true needs none.
//	gs     Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS,
//	       gcloud's application-default login, GCE metadata). None needed
//	       with STORAGE_EMULATOR_HOST (an emulator), anonymous=true or
//	       access_id=-.
//	azblob what gocloud's azureblob opener reads: AZURE_STORAGE_ACCOUNT
//	       with AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, or
//	       AZURE_STORAGE_CONNECTION_STRING (or ..._STORAGEBLOB_...);
//	       otherwise, given an account (AZURE_STORAGE_ACCOUNT or
//	       storage_account=), a token from azidentity's default chain.
//
// A look that has to ask a service (IMDS, STS, a token) is bounded by
// credentialsTimeout.

// ErrNoCredentials is wrapped when the store's backend found no
// credentials to sign with.
var ErrNoCredentials = errors.New("no credentials")

// credentialsTimeout bounds the search for credentials that asks a service.
const credentialsTimeout = 10 * time.Second

// noCredentials is the error of a backend without credentials.
type noCredentials struct {
	who   string // "AWS", "Google Cloud", "Azure"
	hint  string // what to set
	cause error  // why a source that was configured failed; nil: none was
}

func (e *noCredentials) Error() string {
	s := "no " + e.who + " credentials: " + e.hint + ` (see README "Stores")`
	if e.cause != nil {
		s += ": " + oneLine(e.cause.Error())
	}
	return s
}

func (e *noCredentials) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrNoCredentials}
	}
	return []error{ErrNoCredentials, e.cause}
}

// oneLine joins the lines of an SDK's message, which some make several.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// anyEnv reports whether one of the variables is set to something.
func anyEnv(names ...string) bool {
	for _, n := range names {
		if os.Getenv(n) != "" {
			return true
		}
	}
	return false
}

// awsCredentials finds the credentials of an s3:// URL's query, or returns
// nil when the URL asks for none (anonymous=true). The provider returned
// has them cached.
func awsCredentials(ctx context.Context, q url.Values) (aws.CredentialsProvider, error) {
	if anon, _ := strconv.ParseBool(q.Get("anonymous")); anon {
		return nil, nil
	}
	state := imdsState()
	opts := []func(*config.LoadOptions) error{
		config.WithLogger(logging.Nop{}),
		config.WithEC2IMDSClientEnableState(state),
	}
	if p := q.Get("profile"); p != "" {
		opts = append(opts, config.WithSharedConfigProfile(p))
	}
	if r := q.Get("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	configured := state == imds.ClientEnabled || q.Get("profile") != "" ||
		anyEnv("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
			"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")
	fail := func(err error) error {
		e := &noCredentials{who: "AWS", hint: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"}
		if configured {
			e.cause = err
		}
		return e
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fail(err)
	}
	if cfg.Credentials == nil {
		return nil, fail(errors.New("no credential source"))
	}
	rctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(rctx); err != nil {
		return nil, fail(err)
	}
	return cfg.Credentials, nil
}

// imdsState says whether EC2's instance metadata may be asked for
// credentials (see the table above).
func imdsState() imds.ClientEnableState {
	switch strings.ToLower(os.Getenv("AWS_EC2_METADATA_DISABLED")) {
	case "true":
		return imds.ClientDisabled
	case "false":
		return imds.ClientEnabled
	}
	if os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT") != "" || onEC2() {
		return imds.ClientEnabled
	}
	return imds.ClientDisabled
}

// onEC2 reports whether this machine looks like an EC2 instance. A
// variable, so that tests decide.
var onEC2 = func() bool {
	for _, c := range []struct{ path, prefix string }{
		{"/sys/devices/virtual/dmi/id/sys_vendor", "amazon ec2"}, // Nitro
		{"/sys/devices/virtual/dmi/id/board_asset_tag", "i-"},    // Nitro: the instance id
		{"/sys/hypervisor/uuid", "ec2"},                          // Xen
	} {
		if data, err := os.ReadFile(c.path); err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(string(data))), c.prefix) {
			return true
		}
	}
	return false
}

// azureCredentials checks that gocloud's azblob opener will find
// credentials for u (see the table above).
func azureCredentials(ctx context.Context, u *url.URL) error {
	if os.Getenv("AZURE_STORAGE_ACCOUNT") != "" && os.Getenv("AZURE_STORAGE_KEY") != "" ||
		anyEnv("AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGEBLOB_CONNECTIONSTRING") {
		return nil
	}
	e := &noCredentials{who: "Azure", hint: "set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING"}
	if os.Getenv("AZURE_STORAGE_ACCOUNT") == "" && u.Query().Get("storage_account") == "" {
		return e
	}
	// An account without a key: gocloud signs with azidentity's default
	// chain (a service principal, workload or managed identity, az login).
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
		defer cancel()
		_, err = cred.GetToken(rctx, policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
	}
	if err != nil {
		if anyEnv("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "MSI_ENDPOINT") {
			e.cause = err
		}
		return e
	}
	return nil
}
