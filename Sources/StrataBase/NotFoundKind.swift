extension StrataError {
    /// What kind of thing a ``StrataError/notFound(kind:name:reason:)`` did not find.
    public enum NotFoundKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A store: the directory holds no Strata store (the inspection tools, which do not
        /// create one).
        case store
        /// A time series, by path (the inspection tools, which do not create one).
        case timeSeries
        /// A channel, by name.
        case channel
        /// A document database, by name (the inspection tools, which do not create one).
        case documentDatabase
        /// A document, by id.
        case document
        /// An index of a document database, by name: never defined, dropped, or stored but not
        /// named when the database was opened.
        case index
        /// An attachment of a document, by name: gone by the time a ``Blob``'s bytes are read.
        case attachment
        /// A push device, by id.
        case pushDevice
        /// A push subscription, by id.
        case pushSubscription

        /// The kind in words, as messages spell it (`"time series"`, `"push device"`).
        public var description: String {
            switch self {
            case .store: "store"
            case .timeSeries: "time series"
            case .channel: "channel"
            case .documentDatabase: "document database"
            case .document: "document"
            case .index: "index"
            case .attachment: "attachment"
            case .pushDevice: "push device"
            case .pushSubscription: "push subscription"
            }
        }
    }
}
