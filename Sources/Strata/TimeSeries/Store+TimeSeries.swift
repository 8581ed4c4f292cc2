@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Store {
    /// Opens the time series at `path`, creating it if missing.
    ///
    /// ```swift
    /// let prices = try store.timeSeries("prices/AAPL", of: Double.self,
    ///                                   options: TimeSeriesOptions(retainedRange: .limit(10_000)))
    /// ```
    ///
    /// `options` replace the stored ones (a smaller retained range applies at once); without
    /// them, a series that exists keeps its stored options and a new one gets the defaults, as
    /// ``channel(_:of:)`` does. Values of
    /// `Int64`, `Double`, `String`, `Data`, `Bool` and ``JSON`` are stored in compact native
    /// forms; any other `Codable` type in Strata's binary JSON form.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` for an empty path or invalid options;
    ///   ``StrataError/typeMismatch(_:)`` if the series was created with another value type.
    public func timeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                      options: TimeSeriesOptions? = nil) throws -> TimeSeries<Value> {
        try openTimeSeries(path, of: type, options: options, access: nil)
    }

    /// Opens series `path`; with `access` (a session's), creating it or changing its stored
    /// options needs ``Permission/modifyTopic``, and nil `options` keep the stored ones.
    func openTimeSeries<Value: Codable & Sendable>(_ path: String, of type: Value.Type, options: TimeSeriesOptions?,
                                                   access: SessionAccess?) throws -> TimeSeries<Value> {
        try options?.validate()
        let authorize: () throws -> Void = { try access?.require(.modifyTopic, path) }
        let state = try seriesState(path, of: type, options: options ?? TimeSeriesOptions(), authorizeCreate: authorize)
        if let options { try state.apply(options, authorize: authorize) }
        return TimeSeries(state: state, access: access)
    }

    /// The shared state of series `path` (created with `options` if missing), checked to hold
    /// `Value`s. Stored options are not changed. `authorizeCreate` (a session's check) runs
    /// before a missing series is created.
    func seriesState<Value: Codable & Sendable>(_ path: String, of type: Value.Type,
                                                options: TimeSeriesOptions,
                                                authorizeCreate: () throws -> Void = {}) throws -> SeriesState {
        guard !path.isEmpty else { throw StrataError.invalidArgument(argument: "path", reason: "time series path is empty") }
        let typeName = try ValueCodec<Value>.typeName
        let retention = try SeriesRetention.of(self)
        let state = try collections.state(kind: .timeSeries, name: path, as: SeriesState.self) {
            let (entry, _) = try catalog.openOrCreate(kind: .timeSeries, name: path) {
                try authorizeCreate()
                return SeriesPayload(typeName: typeName, options: options).encode()
            }
            let payload = try SeriesPayload.decode(entry.payload, name: path)
            guard try ValueCodec<Value>.accepts(storedTypeName: payload.typeName) else {
                throw StrataError.typeMismatch("time series \"\(path)\" holds \(payload.typeName), not \(typeName)")
            }
            return try SeriesState(store: self, path: path, entry: entry, payload: payload, retention: retention)
        }
        guard try ValueCodec<Value>.accepts(storedTypeName: state.typeName) else {
            throw StrataError.typeMismatch("time series \"\(path)\" holds \(state.typeName), not \(typeName)")
        }
        return state
    }
}
