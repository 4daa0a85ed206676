package db

import "fmt"

// Check runs bbolt's full consistency check (no page both free and in use,
// none unreachable, every branch and leaf well formed and in order) in a
// read transaction and returns what it reports, at most max problems and
// a count of the rest; nil means the file is consistent. An error means
// the check could not run.
//
// Caveat: bbolt walks the file in a goroutine of its own, beyond the guard
// that turns damage into ErrDamaged elsewhere in this package, so damage
// the pre-check does not catch can kill the process. Call it only in a
// process whose death the caller survives (sessdb check runs it in a
// child process).
func (d *DB) Check(max int) (problems []string, err error) {
	err = d.run(false, func(tx *Tx) error {
		n := 0
		for err := range tx.tx.Check() {
			if n++; n <= max {
				problems = append(problems, err.Error())
			}
		}
		if n > max {
			problems = append(problems, fmt.Sprintf("and %d more", n-max))
		}
		return nil
	})
	return problems, err
}
