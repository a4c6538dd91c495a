package paste_test

import (
	"fmt"

	"github.com/stormsim/stormsim/paste"
)

// A gRPC service config pasted as deployed: the method's retryPolicy
// becomes the edge's retry (maxAttempts capped at 5), retryThrottling its
// budget.
func ExampleGRPCServiceConfig() {
	sc := []byte(`{
	  "methodConfig": [{
	    "name": [{"service": "shop.Cart"}],
	    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
	                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
	  }],
	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`)
	p, err := paste.GRPCServiceConfig("service_config.json", sc, "shop.Cart/Get")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Retry.MaxAttempts, p.Retry.On, p.Retry.Backoff.Initial, p.Retry.Backoff.Jitter)
	fmt.Println(p.Budget.Kind, p.Budget.MaxTokens, p.Budget.TokenRatio)
	// Output:
	// 4 [unavailable] 100ms proportional
	// token_bucket 10 0.1
}
