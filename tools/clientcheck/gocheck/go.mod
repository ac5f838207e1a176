module apprun.dev/clientcheck

go 1.26.8

require (
	github.com/oapi-codegen/runtime v1.9.0
	github.com/r3labs/sse/v2 v2.10.0
	github.com/tmaxmax/go-sse v0.12.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/net v0.0.0-20191116160921-f9c825593386 // indirect
	gopkg.in/cenkalti/backoff.v1 v1.1.0 // indirect
)
