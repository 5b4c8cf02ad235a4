package e2e

import (
	"regexp"
	"testing"

	"github.com/conductor-sdk/conductor-go/sdk/client"
)

// The version client: GET /api/version answers the server's version as text.
func TestVersionClient(t *testing.T) {
	t.Parallel()
	version, _, err := client.NewVersionResourceClient(apiClient).GetVersion(ctx)
	must(t, "GetVersion", err)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(version) {
		t.Fatalf("GetVersion returned %q, want a version number", version)
	}
}
