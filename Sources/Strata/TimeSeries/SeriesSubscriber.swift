/// What decoding an event record needs besides its bytes: the series' timestamp base and authors.
struct SeriesDecoding: Sendable {
    let base: Int64
    let authors: [String]
}

/// A subscriber of a series, as the non-generic ``SeriesState`` sees it (the generic side decodes).
protocol SeriesSubscriber: AnyObject, Sendable {
    /// Hands over one event. Returns false when the subscriber is gone: its buffer overflowed (its
    /// stream then ended with ``StrataError/subscriberOverflow(_:)``), it was cancelled, or the
    /// record did not decode (the stream ended with that error).
    func deliver(sequence: UInt64, record: UnsafeRawBufferPointer, decoding: SeriesDecoding) -> Bool
    /// Ends the stream, with an error or normally.
    func finish(throwing error: (any Error)?)
}
