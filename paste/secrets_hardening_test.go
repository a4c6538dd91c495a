package paste

import (
	"strings"
	"testing"
)

// TestAttackPastedSecretsAreNeverQuoted pastes a shadow file, and configs
// whose fields hold secrets, as each kind of config: the problems name
// lines and fields but quote none of the file's content (the "not
// supported" error printed the password hashes).
func TestAttackPastedSecretsAreNeverQuoted(t *testing.T) {
	const shadow = "root:$6$Qx9s8ZkSECRETsalt$SECREThashSECREThashSECREThash./:19500:0:99999:7:::\n" +
		"daemon:*:19500:0:99999:7:::\n" +
		"alice:$y$j9T$SECRETSALT$SECRETHASHVALUE1234567890:19500:0:99999:7:::\n"
	grpcSecrets := `{"methodConfig":[{"name":[{"service":"a.B"}],"timeout":"SECRET pass word 1","retryPolicy":{"maxAttempts":"SECRET$x","initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["SECRET$code"]}}]}`
	envoySecrets := "name: r\nmatch: {prefix: /}\nroute:\n  retry_policy:\n    retry_on: \"SECRET$cond, 5xx\"\n    num_retries: \"SECRET$n\"\n    per_try_timeout: \"SECRET timeout\"\n"
	clusterSecrets := "name: c\nlb_policy: \"SECRET$lb\"\n"
	for _, tc := range []struct {
		name, data string
		read       func(file string, data []byte) error
	}{
		{"shadow as a gRPC service config", shadow, func(f string, d []byte) error { _, err := GRPCServiceConfig(f, d, ""); return err }},
		{"shadow as an Envoy route", shadow, func(f string, d []byte) error { _, err := EnvoyRoute(f, d); return err }},
		{"shadow as an Envoy cluster", shadow, func(f string, d []byte) error { _, err := EnvoyCluster(f, d); return err }},
		{"secrets in a gRPC service config's fields", grpcSecrets, func(f string, d []byte) error { _, err := GRPCServiceConfig(f, d, ""); return err }},
		{"secrets in an Envoy route's fields", envoySecrets, func(f string, d []byte) error { _, err := EnvoyRoute(f, d); return err }},
		{"secrets in an Envoy cluster's fields", clusterSecrets, func(f string, d []byte) error { _, err := EnvoyCluster(f, d); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read("pasted.yaml", []byte(tc.data))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if strings.Contains(msg, "SECRET") || strings.Contains(msg, "$6$") || strings.Contains(msg, "19500") {
				t.Errorf("the file's content is quoted:\n%s", msg)
			}
			if !strings.Contains(msg, "pasted.yaml:") {
				t.Errorf("the problems do not name the file and line:\n%s", msg)
			}
		})
	}
	// What reads as a config's word is still quoted, to help the user.
	_, err := GRPCServiceConfig("c.json", []byte(`{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["TEAPOT"]}}],"retryThrotling":{}}`), "")
	if err == nil || !strings.Contains(err.Error(), `"TEAPOT"`) || !strings.Contains(err.Error(), "retryThrotling") {
		t.Errorf("plain words not quoted: %v", err)
	}
}

// TestAttackPastedHugeDurationsAreRefused: durations of 1e10 s and more
// overflowed a Duration (292 years) and were dropped or misreported; they
// are refused naming the limit.
func TestAttackPastedHugeDurationsAreRefused(t *testing.T) {
	for _, d := range []string{"1e10s", "10000000000s", "315576000000s", "36000001s"} {
		_, err := GRPCServiceConfig("c.json", []byte(backoff(d)), "")
		if err == nil || !strings.Contains(err.Error(), "methodConfig[0].retryPolicy.maxBackoff: want at most 3.6e+07s (10000h)") {
			t.Errorf("maxBackoff %s: %v, want it refused naming the limit", d, err)
		}
	}
	if _, err := GRPCServiceConfig("c.json", []byte(backoff("36000000s")), ""); err != nil {
		t.Errorf("10000h: %v", err)
	}
}

// backoff is a gRPC service config whose retry policy backs off up to d.
func backoff(d string) string {
	return `{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"0.1s","maxBackoff":"` + d +
		`","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`
}
