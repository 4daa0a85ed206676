package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/dirflock"
	"sessdb/internal/fsat"
)

// TicketName is the file Resolve leaves in the job dir for the Promote of
// the same job. It sits beside the job's session dir, outside the
// container's /session mount, so the container cannot edit what promote
// will believe about its own resolve.
const TicketName = "session.ticket"

// maxTicketBytes bounds a ticket read; a real one is under a kilobyte.
// Resolve writes none longer: the longest a ticket's values can make it is
// 123,210 bytes (TestTheLongestTicketIsReadBack), each byte at most six
// of JSON (\u001f, \ufffd): its venue and job id (MaxValueBytes each),
// its job dir (a path the system opens), its root (a fleet's: a
// transcripts dir and a prefix of up to 4096 bytes), a model of at most
// 128 (legacy.NormaliseModel).
// writeTicket refuses a longer one (a root under a working directory
// deeper than a path the system opens) rather than leave it for promote
// to refuse after the job ran.
const maxTicketBytes = 256 << 10

// Session is a job's ticket: what Resolve handed over, and what the Promote
// of the same job needs to promote it once, onto the state it was resolved
// from. Resolve writes it to <job-dir>/session.ticket; ReadTicket reads it
// back.
type Session struct {
	// Ticket is a random id (32 hex characters) that names this job's one
	// promotion: a Promote retried with the same ticket repeats the first
	// one's result instead of promoting again. "" is a ticket written by a
	// sessdb from before the job contract; it promotes with no root or
	// prefix check, and is superseded only where the key no longer holds
	// the generation it resumed (from a legacy key, the bytes), or, cold
	// on a key with no transcript, where one was promoted since, or, cold
	// as locked, where the key holds one. ReadTicket refuses a ticket with no id
	// that has a root, a checksum or a base, or a gen on a cold start or of
	// 0: no sessdb wrote one.
	Ticket string `json:"ticket,omitempty"`
	// Root is the sessions root the ticket was issued from, absolute (a
	// fleet's ID: its transcripts dir and etcd prefix). Promote refuses a
	// ticket whose root is not its own (ErrWrongRoot).
	Root string `json:"root,omitempty"`
	// Key is the conversation's key, 32 lowercase hex characters.
	Key string `json:"key"`
	// Resume, Reason and Bytes are the verdict: whether the key's
	// transcript was delivered, why (not), and how many bytes were staged.
	Resume bool `json:"resume"`
	// Reason is the verdict's reason: gates.Resumed, or the cold start's.
	Reason gates.Reason `json:"reason"`
	// Bytes is how many bytes were staged: 0 for a cold start.
	Bytes int64 `json:"bytes"`
	// CRC32C is the checksum of the Bytes delivered: the staged file must
	// still begin with exactly them when it is promoted.
	CRC32C Checksum `json:"crc32c"`
	// Base is what the key held when the ticket was issued, delivered or
	// not. The promotion commits only onto it.
	Base Base `json:"base"`
	// Venue is the job's venue, which the promotion stamps: carried here
	// because promote is not told it again.
	Venue string `json:"venue"`
	// Model is the job's model as resolve judged it, normalised as the
	// legacy store did. The promotion stamps the model from the transcript
	// instead: pi may resume with another than the job asked for.
	Model string `json:"model,omitempty"`
	// Job is the job's id for the audit history; it may be empty.
	Job string `json:"job,omitempty"`
	// JobDir is the job dir the staged file is in: Resolve gives a
	// relative one absolute, from the working directory it resolved in.
	// ReadTicket sets it to the dir it read the ticket from, whatever the
	// file says.
	JobDir string `json:"job_dir"`

	// oldGen is the generation a ticket from before the job contract says
	// it delivered ("gen", set by ReadTicket; 0: cold, or a key with no
	// record): the one base such a ticket carries.
	oldGen uint64
}

// Base identifies the transcript a key held when a ticket was issued. The
// zero Base is "no transcript". A key with a record is identified by the
// record (generation, size, CRC32C, and in a fleet its revision); a key
// without one (the legacy layout, or a meta.db that could not be read) by
// the file in place.
type Base struct {
	// Gen, Size and CRC32C are the record's identity of the transcript,
	// compared together. Gen is zero for a key without a record; a warm
	// ticket from one (a legacy key) carries the bytes delivered in Size
	// and CRC32C, and is compared by File alone.
	Gen    uint64   `json:"gen,omitempty"`
	Size   int64    `json:"size,omitempty"`   // bytes
	CRC32C Checksum `json:"crc32c,omitempty"` // Castagnoli
	// Rev is the record's revision where the backend has one (a fleet's
	// etcd mod revision, which its commit is guarded by); 0 elsewhere.
	Rev int64 `json:"rev,omitempty"`
	// File identifies the transcript of a key with no record; nil in a
	// ticket for a key with one (ReadTicket refuses a ticket with both a
	// Gen and a File). A writer's base has both when a file is in place,
	// so that a ticket based on the file (a legacy key, since migrated)
	// can be compared with it.
	File *FileID `json:"file,omitempty"`
}

// FileID identifies a file that no record describes: a transcript is only
// ever replaced by rename, so a new one is a new inode.
type FileID struct {
	Dev uint64 `json:"dev"` // the device the file is on
	Ino uint64 `json:"ino"` // its inode number
	// Size and MtimeNs are compared too: a filesystem may give a freed
	// inode number to the next file, so a transcript replaced after its
	// old inode was recycled must not pass for the one the ticket saw.
	Size    int64 `json:"size"`
	MtimeNs int64 `json:"mtime_ns"` // modification time, Unix nanoseconds
}

// fileID is the identity of the file st describes.
func fileID(st *unix.Stat_t) *FileID {
	return &FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, MtimeNs: st.Mtim.Nano()}
}

// Checksum is a CRC32C. It is written in JSON as 8 lowercase hex digits,
// as the text output shows it.
type Checksum uint32

// String returns c as 8 lowercase hex digits.
func (c Checksum) String() string { return fmt.Sprintf("%08x", uint32(c)) }

// MarshalJSON writes c as a JSON string of 8 hex digits.
func (c Checksum) MarshalJSON() ([]byte, error) { return []byte(`"` + c.String() + `"`), nil }

// UnmarshalJSON reads a JSON string of 8 hex digits.
func (c *Checksum) UnmarshalJSON(b []byte) error {
	if len(b) != 10 || b[0] != '"' || b[9] != '"' {
		return errChecksum
	}
	n, err := strconv.ParseUint(string(b[1:9]), 16, 32)
	if err != nil {
		return errChecksum
	}
	*c = Checksum(n)
	return nil
}

// newTicketID returns 128 random bits in hex.
func newTicketID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// writeTicket writes sess to jd/session.ticket through a temp file and a
// rename inside the job dir, so a killed resolve never leaves half a
// ticket. Nothing is fsynced: a power cut may leave an empty or zeroed
// ticket, which ReadTicket refuses (docs/on-disk.md says why that is
// enough). The rename replaces whatever name is there (a link is replaced,
// never followed).
func writeTicket(jd *os.File, sess Session) error {
	b, err := encodeTicket(sess)
	if err != nil {
		return err
	}
	if len(b) > maxTicketBytes {
		return fmt.Errorf("write ticket: %d bytes, more than promote reads (%d): its root is %d bytes, its job dir %d", len(b), maxTicketBytes, len(sess.Root), len(sess.JobDir))
	}
	rnd, err := newTicketID()
	if err != nil {
		return err
	}
	tmp := "." + TicketName + ".tmp-" + rnd[:16]
	f, err := fsat.OpenAt(jd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = ticketWrite(f, b)
	if cerr := ticketClose(f); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsat.RenameAt(jd, tmp, TicketName)
	}
	if err != nil {
		fsat.UnlinkAt(jd, tmp)
	}
	return err
}

// ticketWrite and ticketClose are writeTicket's write and close of its
// temp: variables so that a test can fail them (a full disk, an NFS close
// that reports a write lost) and see the temp's name, which no test could
// otherwise do.
var (
	ticketWrite = (*os.File).Write
	ticketClose = (*os.File).Close
)

// encodeTicket is a ticket's bytes as writeTicket writes them: its JSON
// and a newline.
func encodeTicket(sess Session) ([]byte, error) {
	b, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// removeTicket removes an earlier resolve's ticket from the job dir, so
// that a resolve that fails leaves none behind: a stale ticket names
// another key or another base. Only a file or a link is removed; a
// directory there is an error.
func removeTicket(jd *os.File) error {
	err := fsat.UnlinkAt(jd, TicketName)
	if err == nil || fsat.IsNotExist(err) {
		return nil
	}
	return err
}

// ReadTicket reads the ticket Resolve left in jobDir. The ticket is opened
// without following a link and without blocking on a FIFO, must be a
// regular file of at most 256 KiB (anything else at its name, a link
// included, is ErrBadTicket; no file there wraps fs.ErrNotExist, and
// ErrJobDirBusy too while a resolve there is staging: it removed the
// ticket, and writes its own once done), and its
// contents never appear in an error. The Session's JobDir is jobDir.
// The ticket's own job_dir must name jobDir, however each is spelled:
// the same path, or, where it leads to a directory, the same directory
// (a link to it, a bind mount of it); a relative one, written by a
// sessdb from before 44b9c02 given a relative job dir, is taken from the
// working directory, as promote's own. A ticket whose job_dir leads to
// another directory is ErrBadTicket: a worker copied it (or reused it
// in a retry) into another job dir, whose run would otherwise be
// promoted as the first job's, and the first job's own promote told it
// was a repeat. One whose job_dir leads to no directory is read: its job
// dir was moved since its resolve. One whose job_dir cannot be looked up
// (EACCES, EIO: it may lead to another directory) is ErrBadTicket, as is
// a ticket with no job_dir, or an empty one, which no resolve wrote.
func ReadTicket(jobDir string) (Session, error) {
	jd, err := fsat.OpenDir(jobDir)
	if err != nil {
		return Session{}, fmt.Errorf("read ticket: %w", err)
	}
	defer jd.Close()
	sess, err := readTicketAt(jd, filepath.Join(jobDir, TicketName))
	if fsat.IsNotExist(err) && stagingNow(jd) {
		// A resolve under way removed the ticket before it stages, and
		// writes its own once its copy is done: not a job dir that was
		// never resolved, nor one whose resolve failed.
		return sess, fmt.Errorf("%w: %w (a resolve there is staging, and writes its ticket once done)", ErrJobDirBusy, err)
	}
	if err != nil {
		return sess, err
	}
	if why := otherJobDir(sess.JobDir, jobDir, jd); why != "" {
		return Session{}, fmt.Errorf("read ticket %s: %w: %s", filepath.Join(jobDir, TicketName), ErrBadTicket, why)
	}
	sess.JobDir = jobDir
	return sess, nil
}

// otherJobDir says why named, a ticket's job_dir, is not the job dir jd
// it was read from, opened as path; "" where it is, or where named leads
// to no directory (the job dir was moved since its resolve: a promote
// from its new place is the job's own); a reason too where named goes
// through an automounted dir (autofs), which is not looked in, or cannot
// be looked up (EACCES, EIO): the directory may be there. Its words never
// quote named, which is the file's.
func otherJobDir(named, path string, jd *os.File) string {
	if named == "" {
		return "no job_dir (every resolve writes the one it staged the run in)"
	}
	if named == path {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil && abs == named {
		return ""
	}
	// Looked at without a lookup in an automounted dir: a job_dir under
	// /net/<host> (a ticket copied from another host's) would have the
	// automounter mount that host, and a host that does not answer hang
	// the promote.
	there, err := fsat.StatNoAutomount(named)
	switch {
	case err == nil && !fsat.IsDir(&there),
		fsat.IsNotExist(err), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENAMETOOLONG):
		return "" // it leads to no directory: moved since its resolve
	case errors.Is(err, fsat.ErrAutomount):
		// Not known, as for EACCES below: under an automounted /home a
		// copy taken for a moved job dir would be promoted as the job's.
		return "job_dir goes through an automounted directory, which promote does not look in, so whether it names another directory is not known (promote with the job dir spelled as its resolve was given it)"
	case err != nil:
		// EACCES, EIO: the directory named may be there. A copy read
		// by a worker that cannot look at its first dir would be
		// promoted as the job's, and the job's own promote told repeat.
		return fmt.Sprintf("job_dir cannot be looked up (%s), so whether it names another directory is not known (promote as a user that can look it up)", errnoWords(err))
	}
	here, err := fsat.Fstat(jd)
	if err == nil && here.Dev == there.Dev && here.Ino == there.Ino {
		return ""
	}
	return "job_dir names another directory, which is there (the ticket was copied from it, or moved from it and its name used again since: a ticket promotes only the run staged beside it in the job dir its resolve made)"
}

// stagingNow reports whether another resolve or promote holds the lock
// of jd's staged dir (lockStaging) at this moment. It only asks: the
// shared flock it takes to ask is let go at once.
func stagingNow(jd *os.File) bool {
	if take, _ := dirflock.Flock(); !take {
		return false
	}
	held, err := fsat.FlockedNow(jd, StagedDirName)
	return err == nil && held
}

// readTicketAt is ReadTicket of the job dir jd, its ticket named name in
// errors; JobDir is left as the ticket says.
func readTicketAt(jd *os.File, name string) (Session, error) {
	b, err := fsat.ReadSmallFile(jd, TicketName, maxTicketBytes)
	switch {
	case errors.Is(err, fsat.ErrTooLarge):
		// Said as the decoder's refusals are, with the bound: "file too
		// large" named neither.
		return Session{}, fmt.Errorf("read ticket %s: %w (over %d bytes, the most promote reads: no resolve writes one so long)", name, ErrBadTicket, maxTicketBytes)
	case errors.Is(err, fsat.ErrNotRegular):
		// Not a small regular file: no ticket Resolve could have written,
		// as ErrBadTicket says, and not a fault of the disk's.
		return Session{}, fmt.Errorf("read ticket: %w: %w", ErrBadTicket, err)
	case err != nil:
		return Session{}, fmt.Errorf("read ticket: %w", err)
	}
	return decodeTicket(name, b)
}

// decodeTicket decodes b, the ticket read from name, or refuses it with
// ErrBadTicket and a message that names the file and never quotes it.
// JobDir is left as the ticket says: ReadTicket sets it.
func decodeTicket(name string, b []byte) (Session, error) {
	var sess Session
	var tf ticketFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil {
		// A decoder's message can quote the file's bytes; say what is
		// wrong, and where, in words of its own.
		return sess, fmt.Errorf("read ticket %s: %w (%s)", name, ErrBadTicket, undecodable(err, b))
	}
	// A ticket is an object. A JSON null decodes into one as nothing at
	// all, and was refused by the first rule it broke ("key is not 32
	// lowercase hex characters"), as if it were a ticket missing a key.
	if i := bytes.IndexFunc(b, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 && b[i] != '{' {
		return sess, fmt.Errorf("read ticket %s: %w (a JSON null, not an object)", name, ErrBadTicket)
	}
	// Only white space may follow the object. Decoder.More says false
	// of a "}" or "]" next, so it let `{…}}` and `{…}]` pass.
	end := dec.InputOffset()
	if i := bytes.IndexFunc(b[end:], func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); i >= 0 {
		return sess, fmt.Errorf("read ticket %s: %w (trailing data at offset %d)", name, ErrBadTicket, end+int64(i))
	}
	// Go's decoder takes a field's name in any case ("GEN" for gen) and
	// keeps the last of two: neither is what any resolve writes.
	if why := misnamed(b); why != "" {
		return sess, fmt.Errorf("read ticket %s: %w (%s)", name, ErrBadTicket, why)
	}
	sess = tf.Session
	if tf.Gen != nil && sess.Ticket != "" {
		return sess, fmt.Errorf("read ticket %s: %w: gen beside a ticket id (only tickets from before the job contract have it)", name, ErrBadTicket)
	}
	// Such a sessdb wrote gen only on a resume from a key with a record,
	// and never 0 (omitempty). A cold ticket with one is a warm ticket's
	// verdict edited, which would escape the check of its generation: as
	// a cold start other than absent or locked, it promotes unchecked.
	if tf.Gen != nil && (!tf.Resume || *tf.Gen == 0) {
		return sess, fmt.Errorf("read ticket %s: %w: a gen on a cold start, or a gen of 0 (tickets from before the job contract have one only where they resumed a generation)", name, ErrBadTicket)
	}
	if err := sess.validate(); err != nil {
		return sess, fmt.Errorf("read ticket %s: %w: %s", name, ErrBadTicket, err)
	}
	if sess.Ticket == "" {
		// A ticket with no id promotes with no base, root or prefix check.
		// Only one from before the job contract may: it had none of the
		// contract's fields, which every resolve since writes beside an id.
		// Without this, a ticket whose id was removed would promote a stale
		// run over whatever was promoted since its resolve.
		var contract struct {
			Root   json.RawMessage `json:"root"`
			CRC32C json.RawMessage `json:"crc32c"`
			Base   json.RawMessage `json:"base"`
		}
		if err := json.Unmarshal(b, &contract); err != nil || contract.Root != nil || contract.CRC32C != nil || contract.Base != nil {
			return sess, fmt.Errorf("read ticket %s: %w: a root, checksum or base with no ticket id (only tickets from before the job contract have no id, and they have none of those)", name, ErrBadTicket)
		}
	}
	if tf.Gen != nil {
		sess.oldGen = *tf.Gen
	}
	return sess, nil
}

// undecodable says why b, a ticket's bytes, did not decode as a ticket
// (err, the decoder's error), never quoting b: the decoder's own message
// quotes the byte that broke the syntax, an unknown field's name, a
// number that does not fit. An offset counts from 0, as the models
// file's errors and od count it; the decoder's Offset of a syntax error
// counts the byte that broke it. Before, every one of these was "at byte
// 0" (the decoder's InputOffset, which a failed Decode leaves where the
// value began), or the offset of the value's end.
func undecodable(err error, b []byte) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF) && len(b) == 0:
		return "empty: 0 bytes"
	case errors.Is(err, io.EOF):
		return fmt.Sprintf("only white space in its %s, no JSON", byteCount(len(b)))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("cut short: its %s end inside its JSON", byteCount(len(b)))
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON at offset %d of its %s", max(syn.Offset-1, 0), byteCount(len(b)))
	case errors.As(err, &typ):
		// The field is a path of the ticket's own names (a name the
		// ticket does not have is an unknown field, refused before),
		// behind the Go name of the struct ticketFile embeds.
		kind, _, _ := strings.Cut(typ.Value, " ") // "number 1e400": the number is the file's
		if typ.Field == "" {
			// The whole ticket: an array, a string, a number or a bool
			// where its object belongs. It said "a field: a JSON
			// array", naming a field that is not there.
			return fmt.Sprintf("a JSON %s, not an object", kind)
		}
		field := "a field"
		if f := strings.TrimPrefix(typ.Field, "Session."); ticketFieldPath.MatchString(f) {
			field = f
		}
		if at, ok := valueStart(b, typ.Offset, kind); ok {
			return fmt.Sprintf("%s: a JSON %s at offset %d, which it cannot hold", field, kind, at)
		}
		return fmt.Sprintf("%s: a JSON %s, which it cannot hold", field, kind)
	case errors.Is(err, errChecksum):
		return err.Error()
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "a field a ticket does not have"
	}
	return "not a ticket's JSON"
}

// valueStart is the offset where the value of a type error begins, in b,
// the ticket's bytes, from off, the decoder's Offset for it (the end of a
// string, number, bool or null; just past the "{" or "[" of an object
// or an array), and kind, the JSON type the decoder names. The decoder
// checked the syntax of the whole value before it unmarshalled it, so
// the bytes up to off are JSON: a number, bool or null is the run of
// their letters before off, a string begins at the last quote before
// its closing one that no odd run of backslashes escapes. false where
// off does not end such a value (a decoder that counted otherwise): no
// offset is named then.
func valueStart(b []byte, off int64, kind string) (int64, bool) {
	if off < 1 || off > int64(len(b)) {
		return 0, false
	}
	last := b[off-1]
	switch kind {
	case "object", "array":
		if last != '{' && last != '[' {
			return 0, false
		}
		return off - 1, true
	case "string":
		if last != '"' {
			return 0, false
		}
		for i := off - 2; i >= 0; i-- {
			if b[i] != '"' {
				continue
			}
			n := 0
			for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				return i, true
			}
		}
		return 0, false
	case "number", "bool", "null":
		i := off
		for i > 0 && strings.IndexByte("0123456789+-.eEtruefalsn", b[i-1]) >= 0 {
			i--
		}
		if i == off {
			return 0, false
		}
		return i, true
	}
	return 0, false
}

// ticketNames are the names of a ticket's fields as resolve writes them,
// by the path of the object that holds them ("" the ticket, "base",
// "base.file"), taken from the types' own tags; the ticket's "gen" is a
// ticket's from before the job contract.
var ticketNames = map[string][]string{
	"":          append(jsonNames(reflect.TypeFor[Session]()), "gen"),
	"base":      jsonNames(reflect.TypeFor[Base]()),
	"base.file": jsonNames(reflect.TypeFor[FileID]()),
}

// jsonNames are the JSON names of t's exported fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// misnamed says where b, a ticket that decoded, names a field otherwise
// than resolve does: in another case than its own (Go's decoder matches
// a name in any case, Unicode's folds included: "GEN", or "ſize" for
// size, set the field), or twice in one object (the decoder keeps the
// last). "" for neither. Its words name the field as a ticket names it
// and the offset of the name, never the name as the file spells it.
func misnamed(b []byte) string {
	type level struct {
		array bool
		path  string   // an object's
		names []string // the names its fields may have; nil: none known
		seen  map[string]bool
		key   string // the name whose value comes next
		named bool   // a name was read, its value not yet
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*level
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			// The decoder read it whole: only its end is left.
			return ""
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if name, ok := tok.(string); ok && top != nil && !top.array && !top.named {
			at := off + int64(bytes.IndexByte(b[off:], '"'))
			if !slices.Contains(top.names, name) {
				i := slices.IndexFunc(top.names, func(n string) bool { return strings.EqualFold(n, name) })
				if i < 0 {
					// No field of a ticket's: the decoder refused it
					// already, or it is in no object a ticket holds.
					return ""
				}
				return fmt.Sprintf("%s: named in another case at offset %d, which no resolve writes", join(top.path, top.names[i]), at)
			}
			if top.seen[name] {
				return fmt.Sprintf("%s: named twice, again at offset %d", join(top.path, name), at)
			}
			top.seen[name], top.key, top.named = true, name, true
			continue
		}
		switch tok {
		case json.Delim('{'):
			l := &level{names: ticketNames[""], seen: map[string]bool{}}
			if top != nil {
				l.path, l.names = join(top.path, top.key), nil
				if !top.array {
					l.names = ticketNames[l.path]
				}
			}
			stack = append(stack, l)
			continue
		case json.Delim('['):
			stack = append(stack, &level{array: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value read whole: the object that holds it waits for a name.
		if len(stack) == 0 {
			return ""
		}
		stack[len(stack)-1].named = false
	}
}

// errnoWords is err's errno as strerror says it, without the path the
// error names (the ticket's, whose words are never quoted): "permission
// denied"; "an error" where it holds no errno.
func errnoWords(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "an error"
}

// join is the path of field name in the object at path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// byteCount is n bytes in words: "1 byte", "5 bytes".
func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.Itoa(n) + " bytes"
}

// ticketFieldPath is the form of a ticket's field names, and of a path of
// them ("base.gen").
var ticketFieldPath = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// errChecksum is a crc32c that is not 8 hex digits in a string.
var errChecksum = errors.New("crc32c: want 8 hex digits")

// ticketFile is what ReadTicket accepts: a Session, or a ticket written by
// a sessdb from before the job contract, whose warm tickets also carry the
// generation delivered, "gen". Refusing it would fail the promotion of
// every job resolved before an upgrade and promoted after it; Promote
// compares it with the key's generation instead (Session.oldBase).
type ticketFile struct {
	Session
	Gen *uint64 `json:"gen"`
}

// validate checks the fields a promotion acts on; its messages name the
// field, never its value.
func (s Session) validate() error {
	switch {
	case !ValidKey(s.Key):
		return errors.New("key is not 32 lowercase hex characters")
	case s.Ticket != "" && !validTicketID(s.Ticket):
		return errors.New("ticket id is not 32 lowercase hex characters")
	case s.Ticket != "" && !filepath.IsAbs(s.Root):
		return errors.New("root is not an absolute path")
	// A ticket with no id promotes with no root check and no repeat: only
	// one from before the job contract may, and it had none of these
	// (decodeTicket refuses the fields written at all). A Session whose
	// id a Go caller dropped would otherwise promote into another root.
	case s.Ticket == "" && (s.Root != "" || s.CRC32C != 0 || s.Base != (Base{})):
		return errors.New("a root, checksum or base with no ticket id (only tickets from before the job contract have no id, and they have none of those)")
	case s.Bytes < 0 || s.Base.Size < 0 || s.Base.Rev < 0:
		return errors.New("a size or revision is negative")
	case s.Base.File != nil && s.Base.Gen != 0:
		return errors.New("base names both a record and a file")
	// Resolve writes none longer, and Promote would refuse one.
	case Job{Venue: s.Venue, Model: s.Model, ID: s.Job}.checkValues() != nil:
		return fmt.Errorf("a venue, model or job id is longer than %d bytes, or a venue or job id is not valid UTF-8", MaxValueBytes)
	// The verdict as every resolve writes it, before the job contract
	// too: a resume is resumed and delivered bytes, a cold start none.
	// An edited verdict would be promoted as another resolve's: a cold
	// run counted as a delivery in the resume chain, a history entry
	// that says resumed for a run that started cold, or gave no reason.
	case s.Reason == "":
		return errors.New("no reason")
	// The history records the reason as the resolve's: a promote outcome,
	// or a value that is no token (up to the ticket's size, any bytes),
	// would be recorded as one.
	case !s.Reason.IsResolveVerdict():
		return errors.New("reason is not a resolve's")
	case s.Resume != (s.Reason == gates.Resumed):
		return errors.New("resume and reason disagree")
	case !s.Resume && (s.Bytes != 0 || s.CRC32C != 0):
		return errors.New("a cold start with bytes delivered")
	case s.Resume && s.Bytes == 0:
		return errors.New("a resume of no bytes")
	}
	return nil
}

// validTicketID reports whether id has a ticket id's form, the same as a
// key's: 32 lowercase hex (newTicketID's 128 bits).
func validTicketID(id string) bool { return ValidKey(id) }

// baseOf is the Base of a key whose record says id (nil: no record) and
// whose transcript in place, if a regular file, has stat st (nil: none).
// Resolve records it in the ticket and Promote computes it again under the
// key's exclusive lock; the two agree exactly when nothing has been
// promoted, migrated or changed in between.
func baseOf(id *db.Transcript, st *unix.Stat_t) Base {
	switch {
	case id != nil:
		return Base{Gen: id.Gen, Size: id.Size, CRC32C: Checksum(id.CRC32C)}
	case st != nil && st.Size > 0:
		return Base{File: fileID(st)}
	}
	return Base{}
}

// same reports whether a key whose base is now cur still holds the
// ticket's base b. A record is compared by generation, size, CRC32C and
// revision; a file by device, inode, size and mtime, whatever record the
// key has gained since (a key migrated in between keeps its file, and so
// its base). The size and checksum a legacy ticket also carries describe
// what was delivered, and are not compared here. No transcript is still
// no transcript under a record of 0 bytes: no promotion or acceptance
// makes one, only a migration of an empty legacy current.jsonl (recorded
// as gen 1), which a job resolved on that key before it did not lose.
func (b Base) same(cur Base) bool {
	switch {
	case b.Gen != 0:
		return cur.Gen == b.Gen && cur.Size == b.Size && cur.CRC32C == b.CRC32C && cur.Rev == b.Rev
	case b.File != nil:
		return cur.File != nil && *cur.File == *b.File
	}
	return (cur.Gen == 0 || cur.Size == 0) && cur.File == nil
}

// oldBase reports whether a key whose base is now cur still holds what a
// ticket from before the job contract was resolved from, as far as the
// ticket says: such a ticket has no base, only, when it resumed a key with
// a record, the generation and the bytes delivered (no checksum, no
// revision), and "absent" when the key held no transcript. Without this,
// a job resolved before an upgrade and promoted after it replaced, as the
// old binary did, whatever another job had promoted in between, and its
// retry promoted it again. A warm ticket from a legacy key has no gen,
// only the bytes delivered: the size of the transcript it resumed. A cold
// one that is locked never read the key, and replaces nothing it holds. A
// cold one for another reason says nothing of the key, and promotes as it
// always did.
//
// The old resolve said absent of a transcript missing or empty in place,
// whatever the key's record said (the first rung, before the record is
// read): a key whose transcript was removed or cut out of band is absent
// while its record still names one. Such a key still holds no transcript
// while there is none in place, which a key dir's base says (File, nil
// for none or an empty one); a fleet's base (Rev set) names no file, and
// its record is the key's.
func (s Session) oldBase(cur Base) bool {
	switch {
	case s.oldGen != 0:
		return cur.Gen == s.oldGen && cur.Size == s.Bytes
	case !s.Resume && s.Reason == gates.Absent:
		if cur.Rev != 0 {
			return Base{}.same(cur)
		}
		return cur.File == nil
	case !s.Resume && s.Reason == gates.Locked:
		// The resolve never read the key (another promotion held it, since
		// acknowledged perhaps): as this binary's own locked ticket, whose
		// base is none, it replaces nothing the key holds.
		return Base{}.same(cur)
	case s.Resume:
		// Resumed with no gen: the old resolve read a legacy key (no
		// record), and the ticket's bytes are its file's size. Every
		// promotion since made the key's transcript another one, its
		// record and its file of another size (a run appends); a
		// migration since recorded the same file.
		if cur.File != nil && cur.File.Size != s.Bytes {
			return false
		}
		return cur.Gen == 0 || cur.Size == s.Bytes
	}
	return true
}

// Gen is the generation delivered: the base's when the key's transcript
// was handed over, 0 after a cold start or for a key with no record.
func (s Session) Gen() uint64 {
	if !s.Resume {
		return 0
	}
	return s.Base.Gen
}
