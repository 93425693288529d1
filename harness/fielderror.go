package harness

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// FieldError is a spec's field with a bad value. Its message names the
// field in words ("floor duration 0s: must be > 0"); a caller that knows
// the field by another name, such as a CLI flag, can say it its own way
// from Field, Value and Err.
type FieldError struct {
	// Field is the spec's Go field name, e.g. "FloorDuration".
	Field string
	// Value is the bad value; nil when the message is about the field as
	// a whole (e.g. an unknown lock, which Err names).
	Value any
	Err   error
}

// Error names the field in words, its value and what is wrong.
func (e *FieldError) Error() string {
	if e.Value == nil {
		return fmt.Sprintf("%s: %v", fieldWords(e.Field), e.Err)
	}
	return fmt.Sprintf("%s %v: %v", fieldWords(e.Field), e.Value, e.Err)
}

// Unwrap returns what is wrong with the value.
func (e *FieldError) Unwrap() error { return e.Err }

func FieldErr(field string, value any, problem string) error {
	return &FieldError{Field: field, Value: value, Err: errors.New(problem)}
}

// fieldWords spells a Go field name in words: "FloorDuration" → "floor
// duration", "LeaseTTL" → "lease ttl", "RPCTimeout" → "rpc timeout".
func fieldWords(field string) string {
	rs := []rune(field)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			// A word starts at an upper-case letter after a lower-case
			// one, or at the last capital of an acronym before a word.
			afterLower := unicode.IsLower(rs[i-1])
			endsAcronym := unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if afterLower || endsAcronym {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
