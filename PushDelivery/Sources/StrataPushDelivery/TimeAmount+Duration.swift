import NIOCore

extension TimeAmount {
    /// `duration` in nanoseconds (saturating).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = .nanoseconds(overflow ? .max : product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
    }
}
