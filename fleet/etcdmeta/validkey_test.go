package etcdmeta

import "testing"

// A key is 32 of the 16 lowercase hex digits and nothing else: every
// other byte, a letter just past 'f' or a digit's neighbour included, in
// any place, is refused, so that no name a key dir or an etcd key is
// built from holds a byte the 16 digits do not (fleet's transcripts dir
// takes the key as a directory name), nor two spellings of one key.
func TestValidKeyTakesTheSixteenDigitsAndNoOtherByte(t *testing.T) {
	const good = "0123456789abcdef0123456789abcdef"
	for b := 0; b < 256; b++ {
		for _, at := range []int{0, 15, 31} {
			k := []byte(good)
			k[at] = byte(b)
			hex := b >= '0' && b <= '9' || b >= 'a' && b <= 'f'
			if got := ValidKey(string(k)); got != hex {
				t.Errorf("ValidKey with byte %#x at %d = %v, want %v", b, at, got, hex)
			}
		}
	}
}
