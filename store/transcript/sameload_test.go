package transcript

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// sameValue is reflect.DeepEqual, but for floats: two NaNs are the same.
// A branch holds NaN where pi sums an assistant's usage to NaN (payload's
// usage), and DeepEqual, NaN being unequal to itself, took two Loads of
// the same bytes for different.
func sameValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return x == y || math.IsNaN(x) && math.IsNaN(y)
	case reflect.Complex64, reflect.Complex128:
		x, y := a.Complex(), b.Complex()
		return sameValue(reflect.ValueOf(real(x)), reflect.ValueOf(real(y))) && sameValue(reflect.ValueOf(imag(x)), reflect.ValueOf(imag(y)))
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			v := b.MapIndex(it.Key())
			if !v.IsValid() || !sameValue(it.Value(), v) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.String:
		return a.String() == b.String()
	default:
		// Funcs, channels, unsafe pointers: a branch holds none.
		panic("sameValue: a " + a.Kind().String())
	}
}

// sameValue tells two branches apart wherever DeepEqual does, but for
// NaN, which it takes as itself.
func TestSameValueIsDeepEqualButForNaN(t *testing.T) {
	load := func(s string) *Branch {
		b, err := Load(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const nan = hdr + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[],"usage":{"input":"x","output":1},"stopReason":"stop"}}` + "\n"
	one, two := load(nan), load(nan)
	if !math.IsNaN(one.data.at(0).usage) {
		t.Fatalf("the usage is %v, want NaN (pi sums a string counter to NaN)", one.data.at(0).usage)
	}
	if reflect.DeepEqual(one, two) || !sameValue(reflect.ValueOf(one), reflect.ValueOf(two)) {
		t.Errorf("two Loads of a NaN usage: DeepEqual %v, sameValue %v; want false, true", reflect.DeepEqual(one, two), sameValue(reflect.ValueOf(one), reflect.ValueOf(two)))
	}
	for _, other := range []string{
		hdr + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[],"usage":{"input":2,"output":1},"stopReason":"stop"}}` + "\n",
		hdr + "\n" + `{"type":"message","id":"b","parentId":null,"message":{"role":"assistant","content":[],"usage":{"input":"x","output":1},"stopReason":"stop"}}` + "\n",
		nan + `{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"hi"}}` + "\n",
	} {
		if b := load(other); sameValue(reflect.ValueOf(one), reflect.ValueOf(b)) || reflect.DeepEqual(one, b) {
			t.Errorf("a branch of %q taken for the NaN one's", other)
		}
	}
}
