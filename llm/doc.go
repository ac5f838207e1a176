// Package llm owns apprun's calls to a language model: one chat completion
// in the OpenAI Chat Completions wire format (so OpenAI, Ollama, vLLM,
// llama.cpp's server and LM Studio all work), streamed so progress can be
// shown, retried with backoff on 429 and 5xx within the caller's deadline.
// It knows nothing of Apps or runs.
package llm
