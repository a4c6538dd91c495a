package orders_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormsim/stormsim/examples/orders"
)

// A retry with the same key is answered with the first answer, replayed.
func Example() {
	dir, _ := os.MkdirTemp("", "orders")
	defer os.RemoveAll(dir)
	db, err := orders.Open("sqlite://" + filepath.Join(dir, "orders.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(orders.New(db, orders.Options{}))
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(`{"sku":"sku-42","qty":3}`))
		req.Header.Set("Idempotency-Key", "intent-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get(orders.ReplayedHeader), string(body))
	}
	resp, _ := http.Get(srv.URL + "/orders?key=intent-1")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	// Output:
	// 201  {"id":1,"tenant":"","key":"intent-1","sku":"sku-42","qty":3}
	// 201 true {"id":1,"tenant":"","key":"intent-1","sku":"sku-42","qty":3}
	// {"count":1,"orders":[{"id":1,"tenant":"","key":"intent-1","sku":"sku-42","qty":3}]}
}
