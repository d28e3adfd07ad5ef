package stream

import (
	"fmt"
	"slices"
)

// FieldError is an invalid Config setting, named by its JSON name (the
// struct tag of Config, e.g. "eta", "m", "eps_grad"), so that a caller
// that reads a Config from JSON can point at the field at fault; the
// service answers it as "config.<Field>". Its message is Err's, the text
// the CLI prints.
type FieldError struct {
	// Field is the setting's JSON name.
	Field string
	// Want lists the names the setting accepts, for an unknown enum name
	// (nil for a value out of range).
	Want []string
	// Err says what is wrong.
	Err error
}

func (e *FieldError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// badSetting is a FieldError for field with a formatted message.
func badSetting(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// badName wraps an enum parse error (err != nil) for JSON decoding, with
// the names field accepts.
func badName(field string, names []string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: field, Want: slices.Clone(names), Err: err}
}
