package fleet

import (
	"fmt"
	"os"
)

// runChild is the child side of the multi-process fault tests: mode names
// what the re-exec'd test binary does.
func runChild(mode string) int {
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 2
}
