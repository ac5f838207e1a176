// Package apps owns the App catalog apprun ships: each App's definition
// (price, timeout, retention, input schema) and the executor that does its
// work. The engine knows Apps only through engine.App.
package apps
