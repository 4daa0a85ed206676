// Package shellquote writes a string as one word of a POSIX shell's
// command line, for the command lines sessdb prints for an operator to
// paste (a mend, a remedy): what the shell reads is what was meant, and
// nothing in a name (a "$1", "`…`" or "$(…)" a link's target may hold)
// runs or expands.
package shellquote

import "strings"

// plain are the bytes no POSIX shell reads specially anywhere in a word.
const plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%"

// Word is s as one shell word: s as it is where it holds only plain
// bytes and does not begin with "=", else in single quotes (a "'" in it
// closed, escaped and reopened). A word that begins with "=" is quoted
// because zsh, whose EQUALS option is on by default, reads "=ls" as the
// path of the command ls; POSIX shells and bash read it as it is. It
// does not keep a word that begins with "-" from being taken for a
// flag: the caller puts such a word after "--".
func Word(s string) string {
	if s != "" && s[0] != '=' && strings.Trim(s, plain) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
