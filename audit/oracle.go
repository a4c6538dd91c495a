package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver, pure Go

	"github.com/stormsim/stormsim/topology"
)

// oracle counts the effects of one key for one tenant: what really
// happened, asked of the service's own records.
type oracle interface {
	count(ctx context.Context, key, tenant string) (int, error)
	close() error
}

// newOracle opens the spec's effect oracle.
func newOracle(s *topology.AuditSpec, client *http.Client) (oracle, error) {
	if e := s.Effects.HTTP; e != nil {
		keys, err := topology.ParseJSONPath(e.Count)
		if err != nil {
			return nil, err
		}
		return &httpOracle{base: strings.TrimSuffix(s.Targets[0], "/"), path: e.Path, keys: keys, client: client}, nil
	}
	return openSQL(s.Effects.SQL)
}

// httpOracle asks the service: GET path, and a count at a JSON path.
type httpOracle struct {
	base, path string
	keys       []string
	client     *http.Client
}

func (o *httpOracle) count(ctx context.Context, key, tenant string) (int, error) {
	u := o.base + strings.NewReplacer("{key}", url.QueryEscape(key), "{tenant}", url.QueryEscape(tenant)).Replace(o.path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return -1, err
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return -1, fmt.Errorf("effects: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return -1, fmt.Errorf("effects: GET %s: %w", u, err)
	}
	if resp.StatusCode/100 != 2 {
		return -1, fmt.Errorf("effects: GET %s: status %d: %s", u, resp.StatusCode, oneLine(string(body)))
	}
	n, err := countAt(body, o.keys)
	if err != nil {
		return -1, fmt.Errorf("effects: GET %s: %w", u, err)
	}
	return n, nil
}

func (o *httpOracle) close() error { return nil }

// countAt reads the number, or the length of the list, at keys in a JSON
// document.
func countAt(body []byte, keys []string) (int, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return -1, fmt.Errorf("the answer is not JSON: %w", err)
	}
	path := "$"
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return -1, fmt.Errorf("%s is not an object", path)
		}
		path += "." + k
		if v, ok = m[k]; !ok {
			return -1, fmt.Errorf("%s is missing", path)
		}
	}
	switch x := v.(type) {
	case float64:
		if x < 0 || x != float64(int(x)) {
			return -1, fmt.Errorf("%s is %v, not a count", path, x)
		}
		return int(x), nil
	case []any:
		return len(x), nil
	}
	return -1, fmt.Errorf("%s is neither a number nor a list", path)
}

// sqlOracle asks the service's database.
type sqlOracle struct {
	db     *sql.DB
	query  string
	tenant bool // the query binds :tenant
}

var namedParam = regexp.MustCompile(`:(key|tenant)\b`)

// openSQL opens sqlite:///path or a PostgreSQL DSN, with the query's
// :key and :tenant turned into the driver's numbered parameters.
func openSQL(e *topology.AuditSQLEffect) (*sqlOracle, error) {
	driver, dsn, mark := "pgx", e.DB, "$"
	if rest, ok := strings.CutPrefix(e.DB, "sqlite://"); ok {
		// Read-only, and waiting out the service's write locks.
		driver, dsn, mark = "sqlite", "file:"+rest+"?mode=ro&_pragma=busy_timeout(5000)", "?"
		if rest == "" {
			return nil, errors.New("effects.sql.db: sqlite:// needs a file path (sqlite:///path/to/orders.db)")
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("effects: %w", err)
	}
	db.SetMaxOpenConns(2)
	q := namedParam.ReplaceAllStringFunc(e.Query, func(m string) string {
		if m == ":key" {
			return mark + "1"
		}
		return mark + "2"
	})
	return &sqlOracle{db: db, query: q, tenant: strings.Contains(e.Query, ":tenant")}, nil
}

func (o *sqlOracle) count(ctx context.Context, key, tenant string) (int, error) {
	var n sql.NullInt64
	args := []any{key}
	if o.tenant {
		args = append(args, tenant)
	}
	if err := o.db.QueryRowContext(ctx, o.query, args...).Scan(&n); err != nil {
		return -1, fmt.Errorf("effects: %s: %w", o.query, err)
	}
	if !n.Valid || n.Int64 < 0 {
		return -1, fmt.Errorf("effects: %s returned %v, not a count", o.query, n)
	}
	return int(n.Int64), nil
}

func (o *sqlOracle) close() error { return o.db.Close() }
