package main

import (
	"flag"
	"strings"
	"testing"
)

// FuzzFleetConnection gives the fleet's connection knobs any values from
// the environment (the endpoints, the prefix, the user, the password, the
// timeout; the transcripts dir is a real one): a refusal is one short line
// that quotes neither the password nor an endpoint's user information
// (fleetcfg.go: "No error quotes a password"); what is accepted is the
// values as given (the password up to its first newline) and a Config
// etcdmeta accepts.
func FuzzFleetConnection(f *testing.F) {
	f.Add("http://a:2379", "/sessdb", "", "", "")
	f.Add("http://a:2379,http://b:2379", "/x/", "root", "hunter22\n", "5s")
	f.Add("http://user:s3cr3tpw@a:2379", "", "", "", "")
	f.Add("http://a:2379", "/a/record/b", "u", "p4ssword", "")
	f.Add("http://a:2379", " /x", " u", "pw", "7d")
	f.Add("http://a:2379", "/x", "", "orphanpw", "")
	f.Add("http://a:2379", "/x", "u", "\nrest", "")
	f.Add("http://a:2379", "/"+strings.Repeat("record/", 3000), "", "", "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, endpoints, prefix, user, password, timeout string) {
		if strings.Contains(strings.ToLower(endpoints), "https") {
			return // https reads the system's CA bundle, a file, not this parse
		}
		env := map[string]string{
			"PI_SESSIONS_ETCD_ENDPOINTS": endpoints, "PI_SESSIONS_ETCD_PREFIX": prefix, "PI_SESSIONS_TRANSCRIPTS_DIR": dir,
			"PI_SESSIONS_ETCD_USER": user, "PI_SESSIONS_ETCD_PASSWORD": password, "PI_SESSIONS_ETCD_TIMEOUT": timeout,
		}
		fk := bindFleet(flag.NewFlagSet("t", flag.ContinueOnError))
		fc, isFleet, err := fk.connection(func(name string) string { return env[name] })
		if isFleet != (endpoints != "") {
			t.Fatalf("endpoints %q: a fleet %v", endpoints, isFleet)
		}
		if err != nil {
			msg := err.Error()
			if len(msg) > maxMessage {
				t.Fatalf("a %d-byte error: %.300q", len(msg), msg)
			}
			others := endpoints + prefix + user + timeout + dir
			if pw, _, _ := strings.Cut(password, "\n"); len(pw) >= 6 && strings.Contains(msg, pw) && !strings.Contains(others, pw) {
				t.Fatalf("the error quotes the password %q: %s", pw, msg)
			}
			for _, ep := range strings.Split(endpoints, ",") {
				if at := strings.LastIndex(ep, "@"); at >= 0 {
					secret := ep[:at]
					if _, rest, ok := strings.Cut(secret, "://"); ok {
						secret = rest
					}
					if len(secret) >= 6 && strings.Contains(msg, secret) && !strings.Contains(ep[at:]+prefix+user+timeout, secret) {
						t.Fatalf("the error quotes an endpoint's user information %q: %s", secret, msg)
					}
				}
			}
			return
		}
		if !isFleet {
			return
		}
		pw, _ := firstLine(password)
		if fc.Username != user || user != "" && fc.Password != pw || fc.Prefix != prefix || fc.TranscriptsDir != dir {
			t.Fatalf("accepted as user %q password %q prefix %q dir %q", fc.Username, fc.Password, fc.Prefix, fc.TranscriptsDir)
		}
		if _, err := fc.Config.Validate(); err != nil {
			t.Fatalf("accepted a Config etcdmeta refuses: %v", err)
		}
	})
}
