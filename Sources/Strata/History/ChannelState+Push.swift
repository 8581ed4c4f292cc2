@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension ChannelState.Messages: PushItemUpdates {
    var pushAdapter: PushSubscription.DataAdapter { .history }
    var pushItem: String { name }

    func pushUpdates() -> [() throws -> [String: String]] {
        zip(timetokens, values).map { timetoken, value in
            { [self] in try Self.fields(ofMessage: value, timetoken: timetoken, typeName: typeName, name: name) }
        }
    }

    /// The fields of a history message: its message's (the members of an object, else
    /// `message`), then `timetoken` and `publisher`.
    static func fields(ofMessage record: [UInt8], timetoken: UInt64, typeName: String, name: String) throws -> [String: String] {
        try record.withUnsafeBytes { bytes in
            let parts = try MessageRecord.decode(bytes, what: "message \(timetoken) of channel \"\(name)\"")
            let value = try ValueCodec<JSON>.json(typeName: typeName, bytes: parts.message)
            var fields = PushFields.fields(of: value, singleFieldName: "message")
            fields["timetoken"] = String(timetoken)
            fields["publisher"] = parts.publisher ?? ""
            return fields
        }
    }
}
