// Package server serves a [net/http.Handler] (the Plant Store API of
// package httpapi, or a host's own mux with it mounted) as the plantstore
// binary serves it: client deadlines that add up as below, a header limit
// that lets the handler answer with its own Error, HTTPS with a
// certificate re-read on SIGHUP along with whatever else the host reloads,
// a drain of the requests in flight when the context ends, the metrics
// and Go's profiles on a listener of their own, and a log writer that
// never makes a request wait for the log output.
//
//	logs := server.NewLogWriter(os.Stderr)
//	defer logs.Close()
//	logger := slog.New(slog.NewTextHandler(logs, nil))
//	srv, err := server.Listen(":8443",
//		server.WithLogger(logger),
//		server.WithTLS("cert.pem", "key.pem"),
//		server.WithReload("accounts", accounts.Reload, nil))
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//	h := httpapi.New(ps,
//		httpapi.WithAuthenticator(accounts),
//		httpapi.WithMaxHeaderBytes(server.DefaultMaxHeaderBytes),
//		httpapi.WithLogger(logger))
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	return srv.Serve(ctx, h) // nil once SIGTERM came and the requests in flight ended
//
// Serve returns once the requests in flight have ended: the host then
// stops what works behind them (webhook deliveries), then closes the
// storage.
//
// # Deadlines
//
// [Timeouts] gives a client ReadHeader to send a request's headers, Read
// to send the whole request, Write to read the answer, and Idle between
// requests on a kept-alive connection. net/http counts the write deadline
// (http.Server.WriteTimeout) from the end of a request's headers, not
// from the start of the answer: it also runs while the body arrives (at
// most Read) and while the handler waits for its storage (at most
// Handler). So the server's write deadline is Read + Handler + Write,
// which leaves the client Write to read the answer, and a create the
// storage kept is never cut off before its answer could be written
// (TestSlowBodyWithinReadIsAnswered). A client that stops reading is
// dropped at that deadline (TestUnreadAnswerIsCutOff). Write zero sets no
// write deadline at all; Idle zero is no bound (net/http's own zero would
// be Read's); ReadHeader zero leaves the headers bounded by Read
// (TestSlowHeadersAreCutOff).
//
// # Header limit
//
// The handler refuses a request whose line and headers pass its limit
// (httpapi.WithMaxHeaderBytes) with its own Error, 431. The server reads
// twice that limit ([WithMaxHeaderBytes] takes the handler's, and
// [DefaultMaxHeaderBytes] is the binary's): headers somewhat over the
// limit reach the handler and are answered in the API's shape, JSON with
// the request's id, which a client can parse; only headers past twice the
// limit (and net/http's 4 KiB of slack) are answered by net/http itself,
// as text/plain, without reading the rest (TestAnswersNetHTTPGivesItself),
// so that no client makes the server hold more than about that per
// connection.
//
// # Reloads
//
// [Server.Reload] re-reads the certificate and calls the functions of
// [WithReload]; each that fails keeps the value in use, and the log says
// which changed and which did not. From [Listen] on, SIGHUP reloads once
// [Server.Serve] runs, instead of ending the process; [WithReloadOn]
// gives another channel, such as one the host notified from its very
// start. [Server.Stats] counts the reloads and the failed TLS handshakes.
package server
