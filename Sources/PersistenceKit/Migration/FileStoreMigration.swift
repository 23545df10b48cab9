import Foundation

/// Migrates a file store written with one model to the layout of another, all or nothing:
/// by recording the new layout (and, when new entities sort before old ones, the file's
/// numbering of entities) beside the file when every stored row already fits it (see
/// `FileStore+LayoutAlias.swift`, `EntityNumbering.swift`), else by rewriting the rows.
///
/// The migrated store is written beside the original (`Name.store-migrating`), synced, and
/// renamed over it: until the rename the original is untouched, and the rename replaces it
/// whole, so a process killed at any point leaves a store that opens as the old version
/// (and migrates again) or as the new one. A `-migrating` file a killed migration left is
/// removed by the next one. The migrated store keeps the original's identifier, primary
/// keys and so object IDs; row versions restart at 1.
enum FileStoreMigration {
    /// The suffix of the file a migration writes before it replaces the store.
    static let temporarySuffix = "-migrating"

    /// Migrates the store at `url` from `source` (the model it was written with) to
    /// `destination`, inferring the mapping.
    /// - Throws: ``MigrationError``; the store is then unchanged.
    static func migrate(
        at url: URL, from source: NSManagedObjectModel, to destination: NSManagedObjectModel, durability: FileStore.Durability
    ) throws(MigrationError) {
        source.seal()
        destination.seal()
        let mapping = try InferredMapping(from: source, to: destination)
        if mapping.isIdentity { return }
        do {
            let path = FileStore.resolvedPath(of: url)
            let header = try FileStore.readHeader(at: path)
            // The numbering the file has now: the sidecar's when it stands for `source`.
            let layout = FileStore.effectiveLayout(header: header.modelHash, path: path)
            let current = layout.hash == source.layoutHash.prefix(16) ? layout.numbering : nil
            if let kept = mapping.storedNumbering(current: current), let numbering = EntityNumbering(toModel: kept) {
                // Stored entity indexes never move; the sidecar maps them to the new model's,
                // and carries its version hashes (a version 4 file has no model record to
                // keep them in, and a version 5 file's names the model it was written with).
                try FileStore.writeLayoutAlias(
                    path: path, header: header.modelHash, current: destination.layoutHash,
                    numbering: numbering.isIdentity ? nil : numbering, model: StoreModelSection(destination))
                return
            }
        } catch {
            throw MigrationError(.store, "the store at \(url.path) could not be migrated; it is unchanged.", underlying: error)
        }
        let temporary = URL(fileURLWithPath: url.path + temporarySuffix)
        do {
            try FileStore.destroy(at: temporary)
            let old = try FileStore.open(at: url, model: source, options: FileStore.Options(durability: durability))
            let identifier = UUID(uuidString: old.identifier)
            let historyToken = old.currentHistoryToken
            var transaction = StoreTransaction()
            var keys: [Int32: Int64] = [:]
            do {
                for map in mapping.entities {
                    for row in try old.fetchRows(entity: map.source.index, filter: nil) {
                        let mapped = try mapping.map(row, with: map)
                        transaction.inserts.append(mapped)
                        keys[mapped.id.entity] = max(keys[mapped.id.entity] ?? 0, mapped.id.primaryKey)
                    }
                }
                // Keys handed out but never saved stay handed out.
                for map in mapping.entities {
                    if let next = try old.nextPrimaryKey(entity: map.source.index) {
                        keys[map.destination.index] = max(keys[map.destination.index] ?? 0, next - 1)
                    }
                }
            } catch {
                try? old.close()
                throw error
            }
            try old.close()

            var options = FileStore.Options(durability: .full)
            options.newStoreIdentifier = identifier
            let new = try FileStore.open(at: temporary, model: destination, options: options)
            do {
                // History tokens go on from the old file's (its history is not carried over).
                try new.continueHistory(after: historyToken)
                for (entity, last) in keys.sorted(by: { $0.key < $1.key }) where last > 0 {
                    _ = try new.allocatePrimaryKeys(entity: entity, count: Int(last))
                }
                if !transaction.isEmpty { _ = try new.commit(transaction) }
                try new.close()
            } catch {
                try? new.close()
                try? FileStore.destroy(at: temporary)
                throw error
            }
            try replace(url, with: temporary)
            // A layout sidecar names the old file's header: stale now, and read wrongly if the
            // new header's layout were the old one's.
            try? PosixFileSystem().remove(FileStore.resolvedPath(of: url) + FileStore.layoutAliasSuffix)
        } catch let error as MigrationError {
            throw error
        } catch {
            throw MigrationError(.store, "the store at \(url.path) could not be migrated; it is unchanged.", underlying: error)
        }
    }

    /// Renames the migrated file over the store, and syncs the folder so that the rename
    /// survives a power cut.
    private static func replace(_ url: URL, with temporary: URL) throws {
        let fs = PosixFileSystem()
        try fs.rename(temporary.path, to: url.path)
        try fs.syncDirectory((url.path as NSString).deletingLastPathComponent)
    }
}
