package client

// WithJitter replaces the random draw of each wait between attempts: f
// returns a value in [0, n).
func WithJitter(f func(n int64) int64) Option {
	return func(c *Client) { c.jitter = f }
}
