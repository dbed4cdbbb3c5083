package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// schema is the job table, its results, and the fence: the highest
// fencing token a write to the jobs has carried.
const schema = `
CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY);
CREATE TABLE IF NOT EXISTS results (
	job    int NOT NULL REFERENCES jobs,
	worker text NOT NULL,
	token  bigint NOT NULL,
	at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS fences (resource text PRIMARY KEY, token bigint NOT NULL);
INSERT INTO fences VALUES ('jobs', 0) ON CONFLICT DO NOTHING;`

// errStale is a write refused for its fencing token: a newer holder of the
// lock has written since.
var errStale = errors.New("refused: a newer lock holder has written (stale fencing token)")

// setUp makes the tables and n open jobs.
func setUp(ctx context.Context, db *pgx.Conn, n int) error {
	if _, err := db.Exec(ctx, schema); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `INSERT INTO jobs SELECT generate_series(1, $1) ON CONFLICT DO NOTHING`, n)
	return err
}

// nextJob is the lowest job without a result (0: none left).
func nextJob(ctx context.Context, db *pgx.Conn) (int, error) {
	var id *int
	err := db.QueryRow(ctx, `SELECT min(id) FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.job = j.id)`).Scan(&id)
	if err != nil || id == nil {
		return 0, err
	}
	return *id, nil
}

// finish records job's result. With fencing, the database refuses it when
// the fence holds a newer token than this write's: the UPDATE moves the
// fence up (or keeps it) only for a token at least as new, and locks its
// row until the transaction ends, so two writers cannot pass it out of
// order.
func finish(ctx context.Context, db *pgx.Conn, job int, worker string, token uint64, fenced bool) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if fenced {
			tag, err := tx.Exec(ctx, `UPDATE fences SET token = $1 WHERE resource = 'jobs' AND token <= $1`, int64(token))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errStale
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO results (job, worker, token) VALUES ($1, $2, $3)`, job, worker, int64(token))
		return err
	})
}

// report is what the table holds once the workers are done.
type report struct {
	jobs, done, duplicated int // duplicated: jobs with more than one result
}

func (r report) String() string {
	return fmt.Sprintf("%d jobs, %d done, %d done more than once", r.jobs, r.done, r.duplicated)
}

func readReport(ctx context.Context, db *pgx.Conn) (report, error) {
	var r report
	err := db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM jobs),
		       (SELECT count(DISTINCT job) FROM results),
		       (SELECT count(*) FROM (SELECT job FROM results GROUP BY job HAVING count(*) > 1) d)`).
		Scan(&r.jobs, &r.done, &r.duplicated)
	return r, err
}
