package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// check compares a sample of the keys genposix wrote (an object of each
// kind present and the plan's last object) with the same bytes PUT through
// the server by store.Put, as oxyfs writes: the files' attributes byte for
// byte, and HEAD, GET and LIST of both through the server (ETag, size,
// content type, checksum, bytes). It returns the keys checked, or the
// first difference.
func (p *posixPlan) check(ctx context.Context, st *store.Store, storeURL, dir string) (int, error) {
	client, bucket, err := s3ClientFor(storeURL)
	if err != nil {
		return 0, err
	}
	var sample []int
	var seen [format.NumKinds]bool
	for i := 0; i < p.objects() && i < 10000; i++ {
		if k := p.drawnKind(i); !seen[k] {
			seen[k] = true
			sample = append(sample, i)
		}
	}
	if last := p.objects() - 1; !slices.Contains(sample, last) {
		sample = append(sample, last)
	}
	checked := 0
	for _, i := range sample {
		o := p.object(i)
		for j := range o.values {
			var data []byte
			if o.data != nil {
				data = o.data[j]
			}
			if err := checkKey(ctx, client, bucket, st, dir, o.key(j), data); err != nil {
				return checked, fmt.Errorf("genposix: check %q: %w", o.key(j), err)
			}
			checked++
		}
		if err := checkListing(ctx, client, bucket, &o); err != nil {
			return checked, fmt.Errorf("genposix: check the listing of object %s/%s: %w", o.kind, o.id, err)
		}
	}
	return checked, nil
}

// headFields is what a HEAD says of an object.
type headFields struct {
	ETag, ContentType, CRC32 string
	Size                     int64
}

func head(ctx context.Context, c *s3.Client, bucket, key string) (headFields, error) {
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return headFields{}, fmt.Errorf("head %q: %w", key, err)
	}
	return headFields{aws.ToString(out.ETag), aws.ToString(out.ContentType), aws.ToString(out.ChecksumCRC32), aws.ToInt64(out.ContentLength)}, nil
}

// checkKey compares key (written as a file) with a reference copy of its
// bytes PUT through the server, then deleted.
func checkKey(ctx context.Context, c *s3.Client, bucket string, st *store.Store, dir, key string, data []byte) error {
	sum := md5.Sum(data)
	want := `"` + hex.EncodeToString(sum[:]) + `"`
	ref := "benchtool-check-" + strings.ReplaceAll(key, "/", "-")
	if err := st.Put(ctx, ref, data); err != nil {
		return fmt.Errorf("put the reference %q: %w", ref, err)
	}
	defer st.Delete(ctx, ref)
	got, err := userXattrs(filepath.Join(dir, key))
	if err != nil {
		return err
	}
	wantX, err := userXattrs(filepath.Join(dir, ref))
	if err != nil {
		return err
	}
	if !maps.Equal(got, wantX) {
		return fmt.Errorf("attributes %q, a PUT of the same bytes has %q", got, wantX)
	}
	h, err := head(ctx, c, bucket, key)
	if err != nil {
		return err
	}
	hr, err := head(ctx, c, bucket, ref)
	if err != nil {
		return err
	}
	if h != hr || h.ETag != want || h.Size != int64(len(data)) {
		return fmt.Errorf("HEAD says %+v, of a PUT of the same bytes %+v (want ETag %s, size %d)", h, hr, want, len(data))
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	body, err := io.ReadAll(out.Body) // the SDK checks the body against the checksum as it reads
	out.Body.Close()
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if !bytes.Equal(body, data) || aws.ToString(out.ETag) != want {
		return fmt.Errorf("GET returns %d bytes with ETag %s, want the %d bytes written with ETag %s", len(body), aws.ToString(out.ETag), len(data), want)
	}
	return nil
}

// checkListing lists the object's prefix: every entry, with its size and ETag.
func checkListing(ctx context.Context, c *s3.Client, bucket string, o *posixObject) error {
	prefix := format.Entry{Kind: o.kind, Object: o.id}.Key()
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	want := map[string][2]string{}
	for j := range o.values {
		var data []byte
		if o.data != nil {
			data = o.data[j]
		}
		sum := md5.Sum(data)
		want[o.key(j)] = [2]string{fmt.Sprint(len(data)), `"` + hex.EncodeToString(sum[:]) + `"`}
	}
	got := map[string][2]string{}
	for _, it := range out.Contents {
		got[aws.ToString(it.Key)] = [2]string{fmt.Sprint(aws.ToInt64(it.Size)), aws.ToString(it.ETag)}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("LIST gives (size, ETag) %v, want %v", got, want)
	}
	return nil
}

// userXattrs reads every user.* attribute of a file.
func userXattrs(name string) (map[string]string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(name, buf)
	if err != nil {
		return nil, fmt.Errorf("list attributes of %s: %w", name, err)
	}
	out := map[string]string{}
	for _, a := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(a, "user.") {
			continue
		}
		v := make([]byte, 4096)
		m, err := unix.Getxattr(name, a, v)
		if err != nil {
			return nil, fmt.Errorf("read attribute %s of %s: %w", a, name, err)
		}
		out[a] = string(v[:m])
	}
	return out, nil
}

// s3ClientFor makes an S3 client for a store URL as scripts/bench writes
// them (s3://BUCKET?endpoint=...), with the credentials of the environment.
func s3ClientFor(storeURL string) (*s3.Client, string, error) {
	u, err := url.Parse(storeURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, "", fmt.Errorf("not an s3://BUCKET?endpoint=... URL: %s", termsafe.Redact(storeURL))
	}
	q := u.Query()
	region := q.Get("region")
	if region == "" {
		region = "us-east-1"
	}
	return s3.New(s3.Options{
		Region:       region,
		BaseEndpoint: aws.String(q.Get("endpoint")),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
	}), u.Host, nil
}
