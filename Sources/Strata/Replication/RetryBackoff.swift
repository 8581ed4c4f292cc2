@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The waits between attempts of a replication after network errors and server faults:
/// exponential, from ``initial`` doubling up to ``maximum``, each scaled by a random factor in
/// `[0.5, 1]` (jitter, so that many clients of a restarted gateway do not all come back at once).
///
/// ```swift
/// var backoff = RetryBackoff(maximum: .seconds(30))
/// let wait = backoff.nextDelay()    // 0.05...0.1 s, then 0.1...0.2 s, …, at most 30 s
/// backoff.reset()                   // after a success
/// ```
struct RetryBackoff: Sendable {
    /// The first wait before jitter.
    let initial: Duration
    /// The longest wait.
    let maximum: Duration
    /// Failed attempts since the last success.
    private(set) var failures = 0

    init(initial: Duration = .milliseconds(100), maximum: Duration) {
        self.initial = initial
        self.maximum = max(maximum, initial)
    }

    /// The wait before attempt `failures + 1` without jitter: `initial * 2^failures`, at most
    /// ``maximum``.
    func baseDelay(afterFailures n: Int) -> Duration {
        var delay = initial
        var i = 0
        while i < n, delay < maximum {
            delay = delay * 2
            i += 1
        }
        return min(delay, maximum)
    }

    /// Counts a failure and returns the wait before the next attempt, scaled by `jitter`
    /// (a value in [0, 1]; the factor is `0.5 + jitter / 2`).
    mutating func nextDelay(jitter: Double = Double.random(in: 0...1)) -> Duration {
        let base = baseDelay(afterFailures: failures)
        failures += 1
        return base * (0.5 + min(max(jitter, 0), 1) / 2)
    }

    /// Forgets the failures (after a success).
    mutating func reset() { failures = 0 }
}

extension RetryBackoff {
    /// Runs `body` until it returns, waiting with backoff after each transient fault (the
    /// replication is offline meanwhile); `body` resets the backoff after progress, so that
    /// `configuration.maximumRetries` counts consecutive failures. Other errors end it.
    static func retrying<T: Sendable>(_ configuration: ReplicationConfiguration, _ replication: Replication,
                                      _ body: (inout RetryBackoff) async throws -> T) async throws -> T {
        var backoff = RetryBackoff(maximum: configuration.maximumRetryDelay)
        while true {
            try Task.checkCancellation()
            do {
                return try await body(&backoff)
            } catch GatewayClient.Fault.transient(let text) {
                if let limit = configuration.maximumRetries, backoff.failures >= limit {
                    throw StrataError.network("\(text) (gave up after \(limit) retries)")
                }
                replication.setOffline(true)
                try await Task.sleep(for: backoff.nextDelay())
                replication.setOffline(false)
            }
        }
    }
}
