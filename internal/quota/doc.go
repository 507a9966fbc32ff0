// Package quota is client quota accounting as Kafka does it (KIP-13, KIP-55, KIP-124,
// KIP-219): which quota applies to a request (Resolve, Kafka's precedence order over
// users, client ids and their defaults), the rate it is measured against (a sampled
// rate over quota.window.num windows of quota.window.size.seconds, Kafka's
// SampledStat/Rate), and the throttle time that brings a rate over its bound back to
// it. It decides only; internal/kafka records each request here and mutes the
// connection for the throttle time it gets back.
//
// Time is an argument everywhere, so the rules are tested without clocks.
package quota
