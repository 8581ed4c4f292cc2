import StrataFormat
import StrataFiles
import StrataEngine

extension DatabaseState {
    /// Checks that the conflicting-revision entries `(12, id, documentID, …)` are exactly for
    /// losing leaves of `tree` that are not deletions (FORMAT.md 16.6: "one entry per leaf … and
    /// none other"). A missing entry is found where its contents are read; this finds the entries
    /// no leaf names, which readers — who get entries by the tree's revisions — would otherwise
    /// skip without a word. One scan of the document's entries (none, for a document without
    /// conflicts). Throws a corruption naming the document and the revision.
    func checkConflictEntries(of documentID: String, tree: RevisionTree?, snapshot: Snapshot) throws {
        let prefix = DocumentLayout.conflictPrefix(id, documentID)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            let text = try? d.nextString()
            let revision = text.flatMap { d.isAtEnd ? RevisionID($0) : nil }
            let losing = revision.flatMap { r in tree?.index(of: r) }.map { i in
                i > 0 && tree!.nodes[i].isLeaf && !tree!.nodes[i].isDeleted
            } ?? false
            guard losing else {
                throw StrataError.corrupted(file: "document \(documentID.debugDescription)", offset: 0,
                                            reason: "conflicting-revision entry \(text.map { $0.debugDescription } ?? TupleKey.describe(key)) is not a losing leaf of the document's tree")
            }
        }
    }
}
