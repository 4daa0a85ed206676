package db

import (
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// drawnKey is one key line of the tree in doc.go.
type drawnKey struct {
	name  string // "<seq>" for the history keys
	typ   string // uint, int, string, or record
	tags  []string
	names []string // field names in snake case, beside the tags
}

// drawnTree parses the schema tree out of the package comment in doc.go:
// the indented block whose lines are "bucket/" or "  key  type...".
func drawnTree(t *testing.T) (order []string, tree map[string][]drawnKey) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	tree = map[string][]drawnKey{}
	var bucket string
	record := regexp.MustCompile(`^\{([^}]*)\}`)
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		line = strings.TrimPrefix(line, "\t")
		if name, ok := strings.CutSuffix(line, "/"); ok && !strings.HasPrefix(line, " ") {
			bucket = name
			order = append(order, name)
			continue
		}
		fields := strings.Fields(line)
		if bucket == "" || len(fields) < 2 {
			t.Fatalf("tree line %q is neither a bucket nor a key", line)
		}
		k := drawnKey{name: fields[0]}
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fields[0]))
		if m := record.FindStringSubmatch(rest); m != nil {
			k.typ = "record"
			for _, pair := range strings.Split(m[1], ",") {
				tn := strings.Fields(pair)
				if len(tn) != 2 {
					t.Fatalf("record field %q in %q is not \"tag name\"", pair, line)
				}
				k.tags, k.names = append(k.tags, tn[0]), append(k.names, tn[1])
			}
		} else {
			k.typ = strings.TrimSuffix(strings.Fields(rest)[0], ":")
		}
		tree[bucket] = append(tree[bucket], k)
	}
	if len(order) == 0 {
		t.Fatal("no schema tree found in the package comment of doc.go")
	}
	return order, tree
}

// recordTypes maps each record key of the tree to the Go type stored there.
var recordTypes = map[string]reflect.Type{
	keyTranscript: reflect.TypeFor[Transcript](),
	keyContext:    reflect.TypeFor[Context](),
	keyPending:    reflect.TypeFor[Pending](),
	"<seq>":       reflect.TypeFor[HistoryEntry](),
}

// TestSchemaTree builds a fresh file, writes every key, and compares the
// buckets and keys it holds, the msgpack tags of its records and the type of
// each value with the tree drawn in doc.go.
func TestSchemaTree(t *testing.T) {
	order, tree := drawnTree(t)
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	populate(t, d, 2)

	var gotOrder []string
	err := d.bdb.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(bname []byte, b *bolt.Bucket) error {
			gotOrder = append(gotOrder, string(bname))
			drawn := tree[string(bname)]
			var got []string
			err := b.ForEach(func(k, v []byte) error {
				name := string(k)
				if len(drawn) == 1 && drawn[0].name == "<seq>" {
					if len(k) != 8 {
						t.Errorf("%s/%x: key is %d bytes, the tree draws a u64", bname, k, len(k))
					}
					name = "<seq>"
				}
				if !slices.Contains(got, name) {
					got = append(got, name)
				}
				i := slices.IndexFunc(drawn, func(dk drawnKey) bool { return dk.name == name })
				if i < 0 {
					t.Errorf("%s/%s is in the file but not in the tree", bname, k)
					return nil
				}
				checkValue(t, string(bname)+"/"+name, drawn[i], v)
				return nil
			})
			var want []string
			for _, dk := range drawn {
				want = append(want, dk.name)
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("bucket %s/: file holds keys %v, tree draws %v", bname, got, want)
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(order)
	if !slices.Equal(gotOrder, order) {
		t.Errorf("file holds buckets %v, tree draws %v", gotOrder, order)
	}
	var named []string
	for _, b := range buckets {
		named = append(named, b.name)
	}
	slices.Sort(named)
	if !slices.Equal(named, order) {
		t.Errorf("the buckets list names %v, tree draws %v", named, order)
	}
}

// checkValue decodes v as the tree says it is typed, and for a record
// compares the struct's msgpack tags and field names with the drawing.
func checkValue(t *testing.T, key string, dk drawnKey, v []byte) {
	t.Helper()
	var err error
	switch dk.typ {
	case "uint":
		_, err = decodeUint(v)
	case "int":
		_, err = decodeInt(v)
	case "string":
		_, err = decodeString(v)
	case "record":
		rt := recordTypes[dk.name]
		if rt == nil {
			t.Errorf("%s: no Go type known for the record drawn as %v", key, dk.tags)
			return
		}
		err = decodeRecord(v, reflect.New(rt).Interface())
		var tags, names []string
		for i := range rt.NumField() {
			f := rt.Field(i)
			// The drawing shows the key, not options such as omitempty.
			if tag, _, _ := strings.Cut(f.Tag.Get("msgpack"), ","); tag != "-" {
				tags, names = append(tags, tag), append(names, snake(f.Name))
			}
		}
		if !slices.Equal(tags, dk.tags) || !slices.Equal(names, dk.names) {
			t.Errorf("%s: %s has tags %v fields %v, tree draws %v %v", dk.name, rt, tags, names, dk.tags, dk.names)
		}
	default:
		t.Errorf("%s: the tree draws unknown type %q", dk.name, dk.typ)
		return
	}
	if err != nil {
		t.Errorf("%s: value % x does not decode as the drawn %s: %v", dk.name, v, dk.typ, err)
	}
}

// snake turns PromotedAt into promoted_at and CRC32C into crc32c.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}
