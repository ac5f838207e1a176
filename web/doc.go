// Package web owns the website: sign-up and sign-in with server-side
// sessions, password reset by email (password.go), API keys, Credits, run history and the live run
// view, and the App catalog with a reference page and a run form per App.
// It is server-rendered HTML on the same origin as /api/v1/; the only
// script follows a run live and adds copy buttons. Accounts, keys, runs
// and Credits are the engine's: the website is another way in.
package web
