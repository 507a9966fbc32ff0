// Package quota is client quota accounting as Kafka does it (KIP-13, KIP-55, KIP-124,
// KIP-219): which quota applies to a request (Resolve, Kafka's precedence order over
// users, client ids and their defaults), the account it is measured against (a token bucket
// refilled at the bound and holding one quota.window.size.seconds of it, where Kafka
// uses a sampled rate: see bucket for why), and the throttle time that pays an
// overshoot back. It decides only; internal/kafka records each request here and mutes the
// connection for the throttle time it gets back.
//
// Time is an argument everywhere, so the rules are tested without clocks.
package quota
