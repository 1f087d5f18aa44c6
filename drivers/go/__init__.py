"""The Go client (github.com/apache/pulsar-client-go) as a driver: `python -m drivers.go`."""
