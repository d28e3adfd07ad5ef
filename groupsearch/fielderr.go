package groupsearch

import "fmt"

// FieldError is an invalid Params or Halting setting, named by its JSON
// name (e.g. "t_low", "epsilon", "posterior"), so that a caller that
// reads them from JSON can point at the field at fault; the service
// answers it as "params.<Field>" or "halting.<Field>". Its message is
// Err's, the text the CLI prints.
type FieldError struct {
	// Field is the setting's JSON name.
	Field string
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
