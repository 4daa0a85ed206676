package main

import (
	"flag"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"sessdb/internal/jsstr"
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
	f.Add("http://a:2379", "/x", "u\xff", "pw", "")
	f.Add("http://a:2379", "/x", "u", "s3cr3t\xe9\n", "")
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
		// Blank endpoints (white space only) are neither a fleet nor no
		// fleet: refused, whatever else is set (endpointsSetting).
		if blank := endpoints != "" && strings.TrimFunc(endpoints, jsstr.IsSpace) == ""; blank && (err == nil || isFleet) || !blank && isFleet != (endpoints != "") {
			t.Fatalf("endpoints %q: a fleet %v, %v", endpoints, isFleet, err)
		}
		if err != nil {
			msg := err.Error()
			if len(msg) > maxNameMessage {
				t.Fatalf("a %d-byte error: %.300q", len(msg), msg)
			}
			// A secret is quoted if the error changes when it is replaced
			// by another of its length and lines (nothing is judged by its
			// bytes but where its first line ends).
			again := func(endpoints, password string) string {
				env2 := maps.Clone(env)
				env2["PI_SESSIONS_ETCD_ENDPOINTS"], env2["PI_SESSIONS_ETCD_PASSWORD"] = endpoints, password
				_, _, err := bindFleet(flag.NewFlagSet("t", flag.ContinueOnError)).connection(func(name string) string { return env2[name] })
				if err == nil {
					return ""
				}
				return err.Error()
			}
			if again(endpoints, secretFiller(password)) != msg {
				t.Fatalf("the error quotes the password: %s", msg)
			}
			eps := strings.Split(endpoints, ",")
			for i, ep := range eps {
				at := strings.LastIndex(ep, "@")
				if at < 0 {
					continue
				}
				start := 0
				if j := strings.Index(ep[:at], "://"); j >= 0 {
					start = j + 3
				}
				eps2 := append([]string(nil), eps...)
				eps2[i] = ep[:start] + secretFiller(ep[start:at]) + ep[at:]
				if again(strings.Join(eps2, ","), password) != msg {
					t.Fatalf("the error quotes an endpoint's user information %q: %s", ep[start:at], msg)
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

// secretFiller is s with every byte but ',', '@', CR and LF replaced (by
// 'x', or 'y' where s has an 'x'; a byte of no UTF-8 character by 0xff, or
// 0xfe where s has 0xff): another secret of the same length, lines and
// list shape, UTF-8 exactly where s is.
func secretFiller(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch c := b[i]; {
		case r == utf8.RuneError && n == 1 && c == 0xff:
			b[i] = 0xfe
		case r == utf8.RuneError && n == 1:
			b[i] = 0xff
		case c == ',' || c == '@' || c == '\r' || c == '\n':
		default:
			for j := i; j < i+n; j++ {
				if b[j] == 'x' {
					b[j] = 'y'
				} else {
					b[j] = 'x'
				}
			}
		}
		i += n
	}
	return string(b)
}
