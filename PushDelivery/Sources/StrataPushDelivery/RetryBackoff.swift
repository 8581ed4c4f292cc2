/// The delay before a device's next attempt: exponential backoff with jitter, honouring
/// `Retry-After`.
///
/// For the `attempt`-th consecutive failure of a device (from 1), the ceiling is
/// `min(retryMaxDelay, retryBaseDelay × 2^(attempt − 1))` and the delay a random point in
/// `[ceiling / 2, ceiling]` ("equal jitter": devices that failed together do not come back
/// together, and no retry comes sooner than half the ceiling). When the service sent
/// `Retry-After`, the delay is that, capped at `retryMaxDelay` (so that no device waits longer
/// than the operator allowed), and never less than the jittered delay's floor.
struct RetryBackoff: Sendable {
    var baseDelay: Duration
    var maxDelay: Duration

    /// The ceiling of the `attempt`-th retry (attempt ≥ 1).
    func ceiling(attempt: Int) -> Duration {
        let doublings = max(0, min(attempt - 1, 62))
        var delay = baseDelay
        for _ in 0..<doublings {
            delay = delay * 2
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }

    /// The delay before the `attempt`-th retry; `unit` is a random number in `[0, 1]`.
    func delay(attempt: Int, retryAfter: Duration?, unit: Double) -> Duration {
        let ceiling = ceiling(attempt: attempt)
        let floor = ceiling / 2
        let jittered = floor + (ceiling - floor) * min(1, max(0, unit))
        guard let retryAfter else { return jittered }
        return min(maxDelay, max(retryAfter, floor))
    }

    /// The delay before the `attempt`-th retry, with a random jitter.
    func delay(attempt: Int, retryAfter: Duration?) -> Duration {
        delay(attempt: attempt, retryAfter: retryAfter, unit: Double.random(in: 0...1))
    }
}
