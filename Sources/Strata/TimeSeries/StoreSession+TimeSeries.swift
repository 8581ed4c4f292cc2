@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A session's handles of time series, with its checks (Security/StoreSession.swift), and their
// `async` twins.
extension StoreSession {
    /// The time series at `path`, with the session's checks.
    ///
    /// - Parameters:
    ///   - path: The series' path.
    ///   - type: The type of its values.
    ///   - options: nil keeps the stored options (or, for a new series, the defaults); options
    ///     different from the stored ones replace them and need ``Permission/modifyTopic``.
    /// - Throws: ``StrataError/permissionDenied(principal:permission:path:)`` naming
    ///   ``Permission/modifyTopic`` if the series does not exist (nothing is created) or the
    ///   options would change; otherwise as ``Store/timeSeries(_:of:options:)``.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) throws -> TimeSeries<Value> {
        try store.openTimeSeries(path, of: type, options: options, access: access)
    }

    /// The `async` twin of ``timeSeries(_:of:options:)``.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) async throws -> TimeSeries<Value> {
        try await store.executor.run { try self.timeSeries(path, of: type, options: options) }
    }
}
