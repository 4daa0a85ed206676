package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
	"sessdb/internal/fsat"
	"sessdb/internal/jsstr"
)

// fleetKnobs are the connection to a fleet (package fleet): its records in
// etcd, its transcripts in a directory every worker mounts. With etcd
// endpoints set the store is the fleet and no sessions root is read;
// without them, every other fleet knob set is a configuration error (a
// setting that would silently do nothing). Each has its flag and its
// variable, like every knob, but the password: it has no flag, since a
// command line is readable by every user of the host (ps,
// /proc/PID/cmdline). Its knob pairs the variable, which holds the
// password, with --etcd-password-file, which names a file that does.
type fleetKnobs struct {
	endpoints, prefix, transcriptsDir, ca, cert, key, user, password, timeout knob
}

// fleetFlagNames are the flags bindFleet defines: help lists them in a
// group of their own.
var fleetFlagNames = map[string]bool{
	"etcd-endpoints": true, "etcd-prefix": true, "transcripts-dir": true, "etcd-ca": true, "etcd-cert": true,
	"etcd-key": true, "etcd-user": true, "etcd-password-file": true, "etcd-timeout": true,
}

// bindFleet defines the fleet's connection flags: for resolve, promote,
// dump, check and reap (and any command that opens a store on a fleet).
func bindFleet(fs *flag.FlagSet) *fleetKnobs {
	f := newFleetKnobs()
	for _, k := range f.all() {
		k.bind(fs)
	}
	return f
}

// newFleetKnobs are the fleet's knobs, no flag bound yet (bindFleet
// binds them).
func newFleetKnobs() *fleetKnobs {
	return &fleetKnobs{
		endpoints:      knob{env: "PI_SESSIONS_ETCD_ENDPOINTS", flag: "etcd-endpoints", help: "the etcd members' client `URLS`, comma-separated (http://host:port or https://host:port): the store is then a fleet, its records in etcd and its transcripts in --transcripts-dir, and no sessions root is read (giving one too is an error)"},
		prefix:         knob{env: "PI_SESSIONS_ETCD_PREFIX", flag: "etcd-prefix", help: "the etcd key `PREFIX` the fleet's records live under (default /sessdb)"},
		transcriptsDir: knob{env: "PI_SESSIONS_TRANSCRIPTS_DIR", flag: "transcripts-dir", help: "the fleet's shared transcripts `DIR`, mounted by every worker; required with --etcd-endpoints"},
		ca:             knob{env: "PI_SESSIONS_ETCD_CA", flag: "etcd-ca", help: "the PEM `FILE` of the CA that vouches for the members' certificates (https endpoints; default: the system's roots)"},
		cert:           knob{env: "PI_SESSIONS_ETCD_CERT", flag: "etcd-cert", help: "a client certificate `FILE` (PEM) to present to etcd, with --etcd-key"},
		key:            knob{env: "PI_SESSIONS_ETCD_KEY", flag: "etcd-key", help: "the client certificate's private key `FILE` (PEM)"},
		user:           knob{env: "PI_SESSIONS_ETCD_USER", flag: "etcd-user", help: "the etcd `USER` to log in as (its name alone, not etcdctl's USER:PASSWORD), with a password from --etcd-password-file or PI_SESSIONS_ETCD_PASSWORD"},
		password:       knob{env: "PI_SESSIONS_ETCD_PASSWORD", flag: "etcd-password-file", help: "read the etcd user's password from `FILE` (up to its first newline); without it, the password is the value of PI_SESSIONS_ETCD_PASSWORD, read the same way (a trailing newline, as a secret made from a file has, is dropped): the variable holds the password itself, never a file's name (an absolute name of a file on the host there is a configuration error). There is no password flag: every user of the host can read a command line (ps, /proc/PID/cmdline), not a file of mode 0600 or a process's environment"},
		timeout:        knob{env: "PI_SESSIONS_ETCD_TIMEOUT", flag: "etcd-timeout", help: "the longest one etcd request, or the login, may take, `D` (a Go duration: 800ms, 5s; from 1ms to 10m): a resolve that gets no answer in it is store-unavailable, a promote promote-failed (default 5s)"},
	}
}

func (f *fleetKnobs) all() []*knob {
	return []*knob{&f.endpoints, &f.prefix, &f.transcriptsDir, &f.ca, &f.cert, &f.key, &f.user, &f.password, &f.timeout}
}

// maxPasswordBytes bounds a password file's read: a password is short,
// and a path to a huge file by mistake must not be read whole.
const maxPasswordBytes = 4096

// parse reads the fleet's configuration. It reports whether the store is
// a fleet at all, and refuses, naming the flags or variables, a fleet
// given together with a sessions root (cfg's, or dirArg, a positional
// DIR), a fleet knob set without endpoints, and every value that is not
// usable, before anything connects.
func (f *fleetKnobs) parse(getenv func(string) string, cfg *config, dirArg string) (fleet.Config, bool, error) {
	raw, name, err := f.endpointsSetting(getenv)
	if err != nil {
		return fleet.Config{}, false, err
	}
	switch d, n := cfg.sessionsDir.get(getenv); {
	case raw == "":
	case dirArg != "":
		return fleet.Config{}, true, fmt.Errorf("the DIR argument %s and %s are both given: a store is a sessions root or a fleet, not both", quoteName(dirArg), name)
	case d != "":
		return fleet.Config{}, true, fmt.Errorf("%s and %s are both set: a store is a sessions root or a fleet, not both (unset one)", n, name)
	}
	return f.connection(getenv)
}

// connection reads the fleet's connection alone, for a command that takes
// a sessions root and a fleet together (migrate, between the two): it
// reports whether endpoints are set, and refuses a fleet knob set without
// them and every value that is not usable, naming it.
func (f *fleetKnobs) connection(getenv func(string) string) (fleet.Config, bool, error) {
	var fc fleet.Config
	raw, name, err := f.endpointsSetting(getenv)
	if err != nil {
		return fc, false, err
	}
	if raw == "" {
		if n := f.withoutEndpoints(getenv); n != "" {
			return fc, false, fmt.Errorf("%s is set but no etcd endpoints are (--etcd-endpoints, PI_SESSIONS_ETCD_ENDPOINTS): a fleet setting without a fleet", n)
		}
		return fc, false, nil
	}
	eps, err := parseEndpoints(name, raw)
	if err != nil {
		return fc, true, err
	}
	fc.Endpoints = eps
	if p, n := f.prefix.get(getenv); p != "" {
		if strings.TrimRight(p, "/") == "" || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fc, true, fmt.Errorf("%s: %s is not a key prefix (want a path like /sessdb, without control characters)", n, quoteName(p))
		}
		// As with a sessions root (rootPath): white space around it, or
		// "$FLEET_PREFIX" from an env file, is another namespace in etcd.
		if err := literalName(n, p, "a key prefix has none (records written under such a prefix stay there: see docs/fleet.md before changing it)"); err != nil {
			return fc, true, err
		}
		if err := utf8Path(n, p); err != nil {
			return fc, true, err
		}
		fc.Prefix = p
	}
	d, dn := f.transcriptsDir.get(getenv)
	if d == "" {
		return fc, true, fmt.Errorf("the transcripts dir is required with %s: set --transcripts-dir or PI_SESSIONS_TRANSCRIPTS_DIR", name)
	}
	// As with a sessions root: white space around it is a quoting
	// mistake, and where such a dir exists (' ' in the working directory,
	// one beside the mount) every transcript is absent there.
	if err := literalName(dn, d, "a transcripts dir's name has none"); err != nil {
		return fc, true, err
	}
	if err := utf8Path(dn, d); err != nil {
		return fc, true, err
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		why := "not a directory"
		if err != nil {
			why = errors.Unwrap(err).Error()
		}
		return fc, true, fmt.Errorf("%s: %s: %s (it must exist: the fleet's shared directory, mounted)", dn, quoteName(d), why)
	}
	fc.TranscriptsDir = d
	for _, k := range []*knob{&f.ca, &f.cert, &f.key} {
		if v, n := k.get(getenv); v != "" {
			if err := literalName(n, v, "a PEM file's name has none"); err != nil {
				return fc, true, err
			}
		}
	}
	fc.CAFile, _ = f.ca.get(getenv)
	fc.CertFile, _ = f.cert.get(getenv)
	fc.KeyFile, _ = f.key.get(getenv)
	if err := f.tls(getenv, fc, eps); err != nil {
		return fc, true, err
	}
	if err := f.login(getenv, &fc); err != nil {
		return fc, true, err
	}
	if t, n := f.timeout.get(getenv); t != "" {
		// No member answers sooner than the least: every resolve would
		// be store-unavailable, every promote promote-failed.
		if fc.RequestTimeout, err = parseDuration(n, t, etcdmeta.MinRequestTimeout, etcdmeta.MaxRequestTimeout); err != nil {
			return fc, true, err
		}
	}
	// The login, when there is one, is bounded like any request.
	fc.DialTimeout = fc.RequestTimeout
	if _, err := fc.Config.Validate(); err != nil {
		return fc, true, f.configError(getenv, err)
	}
	return fc, true, nil
}

// withoutEndpoints is the name of the first fleet knob set but the
// endpoints, or "": with no endpoints, a setting that would do nothing,
// which every command that reads the fleet's knobs refuses.
func (f *fleetKnobs) withoutEndpoints(getenv func(string) string) string {
	for _, k := range f.all()[1:] {
		if v, n := k.get(getenv); v != "" {
			return n
		}
	}
	return ""
}

// endpointsSetting is the endpoints' raw text and the name to blame for
// it, "" when not set; an error when they are blank (white space only).
// A blank is neither a fleet nor no fleet: PI_SESSIONS_ETCD_ENDPOINTS=' '
// or a lone newline is a template or a secret that came out empty, and
// every command judged it its own way (resolve and dump said endpoint 1
// is no URL, or named it beside the sessions root as "both set"; stats
// took it for a fleet and refused to count, or counted the root and
// warned). Each command refuses it alike, naming it: taken as unset it
// would send a fleet worker to a sessions root in silence.
func (f *fleetKnobs) endpointsSetting(getenv func(string) string) (raw, name string, err error) {
	raw, name = f.endpoints.get(getenv)
	if raw != "" && strings.TrimFunc(raw, jsstr.IsSpace) == "" {
		return raw, name, fmt.Errorf("%s: %s is blank (white space only): unset it for no fleet, or give the etcd members' URLs", name, quoteName(raw))
	}
	return raw, name, nil
}

// parseEndpoints splits the comma-separated endpoints and checks each as
// etcdmeta does, naming the one at fault.
func parseEndpoints(name, raw string) ([]string, error) {
	var out []string
	eps := strings.Split(raw, ",")
	// Credentials first, in every endpoint, never quoted whole: the
	// password would reach the job's log. A ',' in a password leaves its
	// head in an endpoint of its own, with no '@', which the check of its
	// shape below would quote, or with one of the password's: the last
	// endpoint with an '@' is the one named, whose last '@' ends the
	// user information. No endpoint of that shape holds an '@'.
	for i := len(eps) - 1; i >= 0; i-- {
		if strings.Contains(eps[i], "@") {
			return nil, fmt.Errorf("%s: endpoint %d, %s, carries credentials: give them with --etcd-user and the password variable or file, never in the URL", name, i+1, quoteName(etcdmeta.RedactedEndpoint(eps[i])))
		}
	}
	scheme := ""
	for i, ep := range eps {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u.Port()) ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			// Redacted: credentials in a URL that does not parse are still
			// credentials.
			return nil, fmt.Errorf("%s: endpoint %d, %s, is not http://host:port or https://host:port (a port from 1 to 65535)", name, i+1, quoteName(etcdmeta.RedactedEndpoint(ep)))
		}
		if scheme != "" && u.Scheme != scheme {
			return nil, fmt.Errorf("%s: endpoint %d, %s, mixes %s with %s endpoints", name, i+1, quoteName(etcdmeta.RedactedEndpoint(ep)), u.Scheme, scheme)
		}
		scheme = u.Scheme
		out = append(out, ep)
	}
	return out, nil
}

// validPort reports whether p is a TCP port number, 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}

// tls checks the TLS files' pairing and scheme; their contents are left
// to Validate, whose error configError names.
func (f *fleetKnobs) tls(getenv func(string) string, fc fleet.Config, eps []string) error {
	_, certName := f.cert.get(getenv)
	_, keyName := f.key.get(getenv)
	switch {
	case fc.CertFile != "" && fc.KeyFile == "":
		return fmt.Errorf("%s is set but the key is not (--etcd-key, PI_SESSIONS_ETCD_KEY): a client certificate goes with its key", certName)
	case fc.KeyFile != "" && fc.CertFile == "":
		return fmt.Errorf("%s is set but the certificate is not (--etcd-cert, PI_SESSIONS_ETCD_CERT): a key goes with its certificate", keyName)
	}
	// The scheme as parsed: "HTTP://" is http too (url.Parse lowers it),
	// and named by its CA or certificate, as "http://" is.
	if u, err := url.Parse(eps[0]); err == nil && u.Scheme == "http" {
		for _, k := range []*knob{&f.ca, &f.cert} {
			if v, n := k.get(getenv); v != "" {
				return fmt.Errorf("%s is set but the endpoints are http://: use https:// (over http the TLS settings would be dropped, and everything sent in the clear)", n)
			}
		}
	}
	return nil
}

// login sets the user and the password, from the password file if one is
// named, else from the variable. No error quotes a password.
func (f *fleetKnobs) login(getenv func(string) string, fc *fleet.Config) error {
	user, userName := f.user.get(getenv)
	secret, from := f.password.get(getenv)
	// As for the prefix: white space around a user name is a quoting
	// mistake, and so is a variable or a substitution left unexpanded
	// ("$ETCD_USER" from an env file): etcd would refuse the login, every
	// resolve a fault and every promote promote-failed, its cause far
	// from the variable. A leading "~" is not refused: a shell makes it a
	// home directory, which nobody means for a user's name, so "~ops" is
	// as the operator wrote it. (A password may hold any character: it is
	// taken as given.)
	//
	// A ':' first, and never quoted: etcdctl takes its user as
	// USER:PASSWORD (ETCDCTL_USER, --user; fleet.md's own steps), so a
	// name written that way holds the password, which every later check
	// would quote. Refused whole: etcd takes such a name (etcdctl user add
	// 'a:b' --new-user-password=P makes one, and --user 'a:b' --password P
	// logs in as it), but no setting tells that user from the slip, whose
	// every later check would print the password; the line says so, and
	// such a fleet gives sessdb a user without one.
	if strings.Contains(user, ":") {
		onCommandLine := ""
		if strings.HasPrefix(userName, "--") {
			onCommandLine = "; a command line is readable by every user of the host: change that password"
		}
		return fmt.Errorf("%s holds a ':', as etcdctl's USER:PASSWORD form does (ETCDCTL_USER): give the user's name alone, and its password in PI_SESSIONS_ETCD_PASSWORD or --etcd-password-file (the value is not quoted here: it would show the password%s). An etcd user whose name holds a ':' cannot be used: give the fleet one without", userName, onCommandLine)
	}
	if err := spaceAround(userName, user, "an etcd user's name has none"); err != nil {
		return err
	}
	if err := shellSubstitution(userName, user, "the user's name itself"); err != nil {
		return err
	}
	switch {
	case user == "" && secret != "":
		return fmt.Errorf("%s is set but no etcd user is (--etcd-user, PI_SESSIONS_ETCD_USER)", from)
	case user == "":
		return nil
	case secret == "":
		return fmt.Errorf("%s is set but no password is: set PI_SESSIONS_ETCD_PASSWORD or --etcd-password-file (there is no password flag)", userName)
	case from == "--"+f.password.flag:
		if err := literalName(from, secret, "a password file's name has none"); err != nil {
			return err // a file's name, never the password
		}
		p, err := readPassword(secret)
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		secret = p
	default:
		// The variable is read as the file is, up to its first newline:
		// a Kubernetes secret made from a file that ends in one (echo
		// secret >), exposed as a variable, is how a newline commonly
		// arrives, and taken whole it made a login etcd refuses where the
		// same secret as a file worked. No password holds a newline: the
		// file could never give one.
		p, ok := firstLine(secret)
		if !ok {
			return fmt.Errorf("%s holds no password (its first line is empty)", from)
		}
		// The variable holds the password itself. Its help pairs it with
		// --etcd-password-file, as every flag's with its variable, and an
		// operator who put the password file's name there had it sent as
		// the password: etcd refused every login ("invalid user ID or
		// password"), naming no setting. An absolute name of a regular
		// file here is no password anyone chose; refused, the value not
		// quoted, as the file's flag is named. Looked at without a
		// lookup in an automounted dir (fsat.StatNoAutomount): os.Stat
		// of a password like /net/host/x sent host, part of the secret,
		// to the automounter, which resolved and mounted it; such a
		// value is taken as a password.
		if strings.HasPrefix(p, "/") {
			if st, err := fsat.StatNoAutomount(p); err == nil && fsat.IsRegular(&st) {
				return fmt.Errorf("%s holds the name of a file on this host, not a password (the value is not quoted here): the variable is the password itself; give the file as --%s FILE", from, f.password.flag)
			}
		}
		secret = p
	}
	fc.Username, fc.Password = user, secret
	return nil
}

// readPassword reads a password file: a regular file (a FIFO is refused,
// not waited on), at most maxPasswordBytes, up to its first newline, not
// empty. The path is opened as given, links followed: it is the worker's
// own configuration, as the TLS files etcd's client opens by path are,
// never a name a job can write, and a mounted secret is commonly a link
// (a Kubernetes secret volume's ..data).
func readPassword(path string) (string, error) {
	b, err := fsat.ReadConfigFile(path, maxPasswordBytes)
	switch {
	case errors.Is(err, fsat.ErrNotRegular):
		return "", fmt.Errorf("%s is not a regular file", quoteName(path))
	case errors.Is(err, fsat.ErrTooLarge):
		return "", fmt.Errorf("%s is over %d bytes: not a password file", quoteName(path), maxPasswordBytes)
	case err != nil:
		return "", err
	}
	line, ok := firstLine(string(b))
	if !ok {
		return "", fmt.Errorf("%s holds no password (its first line is empty)", quoteName(path))
	}
	return line, nil
}

// firstLine is a password as a file or the variable holds it: up to its
// first newline, a CR before it dropped; false when that is empty.
func firstLine(s string) (string, bool) {
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimSuffix(line, "\r")
	return line, line != ""
}

// credentialsNamed adds to err, where etcd refused the credentials
// (etcdmeta.ErrAuth), the flags or variables they came from: the user's,
// its password's, the client certificate's. Before, "etcd refused the
// credentials: authentication failed" named none, and an operator whose
// password was in PI_SESSIONS_ETCD_PASSWORD, or set in a unit file they
// did not write, had to guess which setting to fix. Never a value.
func (f *fleetKnobs) credentialsNamed(getenv func(string) string, err error) error {
	if !errors.Is(err, etcdmeta.ErrAuth) {
		return err
	}
	var from []string
	if user, name := f.user.get(getenv); user != "" {
		_, pass := f.password.get(getenv)
		from = append(from, "the user from "+name, "its password from "+pass)
	}
	if cert, name := f.cert.get(getenv); cert != "" {
		from = append(from, "the client certificate from "+name)
	}
	if len(from) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(from, ", "))
}

// configError names the flag or variable behind a Config field etcdmeta
// refused (the contents of a TLS file: the checks above catch the rest).
func (f *fleetKnobs) configError(getenv func(string) string, err error) error {
	var ce *etcdmeta.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	k := map[string]*knob{"CAFile": &f.ca, "CertFile": &f.cert, "KeyFile": &f.key, "Prefix": &f.prefix, "Username": &f.user, "Password": &f.password}[ce.Field]
	if k == nil {
		k = &f.endpoints
	}
	_, name := k.get(getenv)
	return fmt.Errorf("%s: %s", name, printable(boundedDetail(ce.Detail)))
}

// boundedDetail keeps an error's detail to one readable line: it quotes
// paths and errors, not a value anyone could make huge, but a path can be
// long.
func boundedDetail(s string) string {
	const max = 300
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// durationRE is a Go duration with no sign and no space: "800ms", "1m30s".
// Its units are Go's, both micro signs (U+00B5 and U+03BC) included.
var durationRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|\x{b5}s|\x{3bc}s|ms|s|m|h))+$`)

// durationFlag is flag.Duration with a reason when the value does not
// parse: the flag package says only "parse error", and "7d" (Go has no d
// unit) is the mistake an operator makes. What it accepts is
// flag.Duration's, white space around it trimmed (as parseDuration
// trims it); each command judges the range.
type durationFlag struct{ p *time.Duration }

func bindDuration(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := &value
	fs.Var(durationFlag{p}, name, usage)
	return p
}

func (f durationFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f durationFlag) Set(s string) error {
	s = strings.TrimFunc(s, jsstr.IsSpace) // as parseDuration
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && durationRE.MatchString(strings.TrimLeft(s, "+-")):
		// A duration of Go's form that Go refuses is beyond its range:
		// "not a duration, there is no d unit" would send the operator
		// looking for a mistake in the form.
		return fmt.Errorf("is out of range (a Go duration is at most %v, about 292 years)", time.Duration(math.MaxInt64))
	case err != nil:
		return errors.New("is not a duration (want a Go duration like 90m or 168h: digits and a unit, ns us ms s m or h; there is no d unit)")
	}
	*f.p = d
	return nil
}

// parseDuration reads a Go duration strictly: no sign, no space inside,
// no bare number, above zero, at least min and at most max. Its range
// error names both ends, whichever the value misses. White space around
// it is trimmed (JavaScript's set), as around a whole number
// (wholeNumber): "5s\n", from an env file or a secret made from a file,
// is 5s, and nothing else it could mean; refused, it was "not a
// duration", the newline unseen in the message.
func parseDuration(name, raw string, min, max time.Duration) (time.Duration, error) {
	v := strings.TrimFunc(raw, jsstr.IsSpace)
	if !durationRE.MatchString(v) {
		return 0, fmt.Errorf("%s: %s is not a duration (want a Go duration like 800ms or 5s: digits and a unit, no sign)", name, brief(raw))
	}
	// A duration of that form that Go refuses is one beyond its range
	// (about 292 years): out of range, as a long one within it is.
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d < min || d > max {
		floor := "above 0"
		if min > 0 {
			floor = fmt.Sprintf("at least %v", min)
		}
		return 0, fmt.Errorf("%s: %s is out of range (want %s and at most %v)", name, brief(raw), floor, max)
	}
	return d, nil
}
