/// Every collection kind's ``CollectionInspector``, one line per kind, in the order `strata-dump`
/// lists their subcommands.
package enum CollectionInspectors {
    /// The registered inspectors.
    package static let all: [any CollectionInspector.Type] = [
        SeriesInspector.self,
        ChannelInspector.self,
        DocumentInspector.self,
        SecurityInspector.self,
        PushInspector.self,
    ]
}
