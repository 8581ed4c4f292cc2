import Testing
@testable import StrataPushDelivery

@Suite struct RetryBackoffTests {
    let backoff = RetryBackoff(baseDelay: .seconds(1), maxDelay: .seconds(300))

    @Test("the ceiling doubles from the base delay up to the maximum")
    func ceiling() {
        #expect((1...10).map { backoff.ceiling(attempt: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300].map { Duration.seconds($0) })
        #expect(backoff.ceiling(attempt: 1_000) == .seconds(300))
    }

    @Test("the jittered delay lies in [ceiling / 2, ceiling]")
    func jitter() {
        for attempt in 1...12 {
            let c = backoff.ceiling(attempt: attempt)
            #expect(backoff.delay(attempt: attempt, retryAfter: nil, unit: 0) == c / 2)
            #expect(backoff.delay(attempt: attempt, retryAfter: nil, unit: 1) == c)
            for _ in 0..<20 {
                let d = backoff.delay(attempt: attempt, retryAfter: nil)
                #expect(d >= c / 2 && d <= c)
            }
        }
    }

    @Test("Retry-After is honoured, capped at the maximum, and never shorter than the jitter's floor")
    func retryAfter() {
        #expect(backoff.delay(attempt: 1, retryAfter: .seconds(30), unit: 0.5) == .seconds(30))
        #expect(backoff.delay(attempt: 1, retryAfter: .seconds(3_600), unit: 0.5) == .seconds(300))
        #expect(backoff.delay(attempt: 5, retryAfter: .zero, unit: 1) == .seconds(8))
    }
}
