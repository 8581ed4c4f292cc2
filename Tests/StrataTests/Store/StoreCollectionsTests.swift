import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The one contract of a kind of collection (Store/CollectionModule.swift) and its one list
// (Store/StoreCollections.swift): ids unique, every key a store writes in a registered keyspace,
// every catalog entry of a registered kind, and push's data adapters each offered by one kind.
@Suite("StoreCollections")
struct StoreCollectionsTests {
    @Test("keyspace and kind ids are unique across the kinds, and none is the engine's")
    func idsAreUnique() {
        let keyspaces = StoreCollections.all.flatMap { $0.keyspaces.map(\.id) }
        #expect(Set(keyspaces).count == keyspaces.count)
        #expect(!keyspaces.contains(Keyspace.catalog.id) && !keyspaces.contains(Keyspace.keyValue.id))
        let kinds = StoreCollections.all.flatMap { $0.kinds.map(\.id) }
        #expect(Set(kinds).count == kinds.count)
        #expect(!kinds.contains(0), "kind 0 is the catalog's id counter")
        #expect(StoreCollections.keyspaces.map(\.id) == StoreCollections.keyspaces.map(\.id).sorted())
        for keyspace in StoreCollections.keyspaces {
            #expect(!keyspace.name.isEmpty)
            #expect(StoreCollections.keyspaceName(keyspace.id) == keyspace.name)
        }
        #expect(StoreCollections.keyspaceName(99) == "keyspace 99")
    }

    @Test("every data adapter of push is offered by exactly one kind, which owns its catalog kind")
    func pushAdapters() {
        for adapter in [PushSubscription.DataAdapter.timeSeries, .history] {
            let offering = StoreCollections.all.filter { $0.pushAdapter == adapter }
            #expect(offering.count == 1, "\(adapter)")
            if let module = offering.first, let kind = module.kinds.first {
                #expect(StoreCollections.module(of: kind).map { ObjectIdentifier($0) } == ObjectIdentifier(module))
            }
        }
        #expect(StoreCollections.module(of: CollectionKind(id: 999, name: "unknown")) == nil)
        for kind in StoreCollections.kinds {
            #expect(StoreCollections.pushAdapter(of: kind) == StoreCollections.module(of: kind)?.pushAdapter, "\(kind)")
        }
        #expect(StoreCollections.pushAdapter(of: .timeSeries) == .timeSeries)
        #expect(StoreCollections.pushAdapter(of: .channel) == .history)
        #expect(StoreCollections.pushAdapter(of: .documentDatabase) == nil)
    }

    @Test("every key a store with every kind of collection writes is in a registered keyspace and kind")
    func everyKeyIsRegistered() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var options = StoreOptions()
        options.durability = .buffered
        let store = try Store.open(at: dir.url, options: options)
        defer { try? store.close() }
        let series = try store.timeSeries("contract/series", of: Double.self)
        let first = try series.append(1.5)
        try series.edit(originalSequence: first.sequence, value: 2.5)
        try store.channel("contract/channel", of: JSON.self).publish(["n": 1])
        let byKind = DocumentIndex(name: "byKind", version: "1", map: { doc, emit in
            if let kind = doc["kind"] { emit(kind, nil) }
        })
        let db = try store.documents("contract", indexes: [byKind])
        var doc = Document(id: "a", fields: ["kind": "x"])
        doc.attachments["note"] = Attachment(data: Data("hello".utf8), contentType: "text/plain")
        try db.save(doc)
        try store.put(Array("raw".utf8), Array("value".utf8))
        var policy = SecurityPolicy()
        policy.roles["reader"] = Role(paths: ["contract": [.readTopic]])
        try store.setSecurityPolicy(policy)
        let push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "app", deviceToken: "token"))
        var subscription = PushSubscription(mode: .distinct, items: ["contract/series"], fields: ["value"])
        subscription.notificationFormat = #"{"v":"${value}"}"#
        _ = try push.subscribe(subscription, device: device.id)
        try series.append(3.5)
        try store.compact()

        let registered = Set(StoreCollections.keyspaces.map(\.id))
        let kinds = Set(StoreCollections.kinds.map(\.id))
        let snapshot = try store.engine.snapshot()
        let cursor = snapshot.cursor()
        var seen: Set<UInt64> = []
        while try cursor.next() {
            let elements = cursor.withKey { key -> [TupleElement] in
                var decoder = TupleKeyDecoder(Array(key))
                var out: [TupleElement] = []
                while out.count < 2, !decoder.isAtEnd, let e = try? decoder.next() { out.append(e) }
                return out
            }
            guard case .uint(let keyspace)? = elements.first else {
                Issue.record("a key that does not start with a keyspace id")
                continue
            }
            #expect(registered.contains(keyspace), "keyspace \(keyspace) is not registered")
            seen.insert(keyspace)
            if keyspace == 0, elements.count > 1, case .uint(let kind) = elements[1], kind != 0 {
                #expect(kinds.contains(kind), "catalog kind \(kind) is not registered")
            }
        }
        // Every kind wrote something, so the check above covered them all.
        for module in StoreCollections.all {
            #expect(module.keyspaces.contains { seen.contains($0.id) }, "\(module) wrote nothing")
        }
    }
}
