// Package robustness checks that plantstore's HTTP API is linearizable while
// its processes and its database are killed under it, in the manner of
// Jepsen and etcd's tests/robustness.
//
// Clients send random creates, deletes and reads of a few ids to real
// plantstore processes over loopback and record when each call started,
// when it returned and what it answered. [Model] is the sequential
// specification of one plant, and [Check] asks
// github.com/anishathalye/porcupine whether the recorded history could be
// the outcome of applying every operation atomically, in an order that
// respects real time.
//
// An operation whose outcome the client cannot know (error 504, a broken
// connection, a timeout, a process killed while answering) is recorded as
// [Unknown]: it is pending from its call until after every other operation,
// and the model lets it have taken effect or not. Error 503 promises that
// nothing was kept, and is modelled as an operation without effect.
package robustness
