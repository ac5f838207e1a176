package llm

import (
	"fmt"
	"strings"
)

// SettingError is a Config field with a value the client cannot use. The
// caller names the setting its users know (a flag, an environment
// variable) by Field.
type SettingError struct {
	// Field is the Config field: JSONMode, Provider, APIVersion, BaseURL
	// or MaxAttempts.
	Field string
	// Value is what it held; Want says what it takes.
	Value, Want string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("llm: %s %q: want %s", e.Field, e.Value, e.Want)
}

// Check refuses settings the client cannot use: an unknown JSON mode or
// provider, attempts below 0, Azure without its endpoint or api-version.
// A Config without a BaseURL (no model) passes when the rest does.
func (cfg Config) Check() error {
	if _, err := modeChain(cfg.JSONMode); err != nil {
		return &SettingError{Field: "JSONMode", Value: cfg.JSONMode, Want: strings.Join([]string{JSONAuto, JSONSchema, JSONObject, JSONPrompt}, ", ")}
	}
	switch cfg.Provider {
	case "", ProviderOpenAI, ProviderAzure:
	default:
		return &SettingError{Field: "Provider", Value: cfg.Provider, Want: ProviderOpenAI + " or " + ProviderAzure}
	}
	if cfg.MaxAttempts < 0 {
		return &SettingError{Field: "MaxAttempts", Value: fmt.Sprint(cfg.MaxAttempts), Want: "1 or more (0: the default, 5)"}
	}
	if cfg.Provider == ProviderAzure && cfg.BaseURL == "" {
		return &SettingError{Field: "BaseURL", Want: "the Azure OpenAI resource's endpoint, https://<resource>.openai.azure.com"}
	}
	if cfg.Provider == ProviderAzure && cfg.APIVersion == "" {
		return &SettingError{Field: "APIVersion", Want: "Azure OpenAI's api-version, e.g. 2024-10-21"}
	}
	return nil
}
