package web

import (
	"fmt"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
)

// accountWords is a refused sign-up or new password in the site's words:
// the API's messages ("password: at least 10 characters") are for
// developers.
func accountWords(e *engine.Error) string {
	if e.Code == engine.CodeEmailTaken {
		return "An account with this email already exists. Sign in, or reset its password if you forgot it."
	}
	if len(e.Fields) == 1 {
		switch f := e.Fields[0]; {
		case f.Field == "password" && f.Code == service.PasswordTooShort:
			return fmt.Sprintf("Use at least %d characters for your password.", service.MinPassword)
		case f.Field == "password" && f.Code == service.PasswordTooLong:
			return fmt.Sprintf("This password is too long: use at most %d letters and digits, or fewer with accents or emoji.", service.MaxPassword)
		case f.Field == "email":
			return "Enter your email address, for example name@example.com."
		}
	}
	return "We could not sign you up with these details. Check them and try again."
}
