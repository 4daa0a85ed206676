package transcript

import "testing"

// pi compares a header's version with numbers, which converts it by
// ToPrimitive: node 20.20.2 throws "Cannot convert object to primitive
// value" on each value marked so below (checked with JSON.parse(raw) < 2),
// and not on the others.
func TestToPrimitiveThrows(t *testing.T) {
	for raw, throws := range map[string]bool{
		`{"toString":1}`:             true,
		`{"toStr\u0069ng":1}`:        true, // the name unescaped, as JSON.parse has it
		`{"toString":1,"valueOf":2}`: true,
		`[{"toString":1}]`:           true,
		`[1,{"toString":1}]`:         true, // join converts every element
		`[[{"toString":1}]]`:         true,
		`{"valueOf":1}`:              false, // the inherited toString answers
		`{"a":{"toString":1}}`:       false,
		`{}`:                         false,
		`[{}]`:                       false,
		`"toString"`:                 false,
		`3`:                          false,
		`null`:                       false,
	} {
		if got := toPrimitiveThrows([]byte(raw)); got != throws {
			t.Errorf("toPrimitiveThrows(%s) = %v, want %v", raw, got, throws)
		}
	}
}
