package e2e

import (
	"net/http"
	"os"
	"testing"

	"github.com/conductor-sdk/conductor-go/sdk/client"
	"github.com/conductor-sdk/conductor-go/sdk/settings"
)

// API authentication is on: the key from the environment works (every other test), a wrong
// secret or no key at all gets no answer but an error.
func TestAuthWrongOrMissingKeyRefused(t *testing.T) {
	t.Parallel()
	url := os.Getenv(settings.EnvServerURL)
	if os.Getenv(settings.EnvAuthKey) == "" {
		t.Skip("no CONDUCTOR_AUTH_KEY: the server under test has API authentication off")
	}
	wrong := client.NewMetadataClient(client.NewAPIClient(
		settings.NewAuthenticationSettings(os.Getenv(settings.EnvAuthKey), "not-the-secret"),
		settings.NewHttpSettings(url)))
	if _, _, err := wrong.GetTaskDefs(ctx); err == nil {
		t.Fatalf("a wrong secret was accepted")
	}
	anonymous := client.NewMetadataClient(client.NewAPIClient(
		settings.NewAuthenticationSettings("", ""), settings.NewHttpSettings(url)))
	_, resp, err := anonymous.GetTaskDefs(ctx)
	assertStatus(t, "GetTaskDefs without a key", resp, err, http.StatusUnauthorized)
}
