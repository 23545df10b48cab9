// A store file numbers its entities once, when it is created: stored entity i is the model's
// entity i then (entities are indexed in name order). A migration that adds an entity whose
// name sorts before old ones moves the model's indexes of the old entities; rather than
// rewriting every row and reference, it records the store's numbering in the layout sidecar
// (see FileStore+LayoutAlias.swift), and the store translates entity indexes where it reads
// and writes them: entry headers, key entries, references, history changes, close counts.
// Everything in memory speaks the model's indexes; only the bytes of the file speak the
// stored ones. Compaction writes the model's own numbering, and the sidecar goes.

/// The entity numbering of a store file that differs from its model's: a bijection between
/// stored entity indexes and the model's entity indexes.
struct EntityNumbering: Equatable, Sendable {
    /// The model entity index of each stored entity index.
    let toModel: [Int32]
    /// The stored entity index of each model entity index.
    let toStored: [Int32]

    /// The numbering in which stored entity `i` is model entity `toModel[i]`; `nil` unless
    /// `toModel` holds each of `0..<toModel.count` once.
    init?(toModel: [Int32]) {
        var toStored = [Int32](repeating: -1, count: toModel.count)
        for (stored, model) in toModel.enumerated() {
            guard model >= 0, Int(model) < toModel.count, toStored[Int(model)] < 0 else { return nil }
            toStored[Int(model)] = Int32(stored)
        }
        self.toModel = toModel
        self.toStored = toStored
    }

    /// Whether every entity keeps its index (then the store keeps no numbering).
    var isIdentity: Bool { toModel.enumerated().allSatisfy { Int32($0.offset) == $0.element } }

    /// The model index of stored entity `stored`; -1 (which every check refuses as out of
    /// range) for an index the numbering does not have, so damage stays reported as damage.
    @inline(__always)
    func model(_ stored: Int32) -> Int32 {
        stored >= 0 && Int(stored) < toModel.count ? toModel[Int(stored)] : -1
    }

    /// The stored index of model entity `model` (the model's own indexes are always in range).
    @inline(__always)
    func stored(_ model: Int32) -> Int32 {
        model >= 0 && Int(model) < toStored.count ? toStored[Int(model)] : model
    }
}

extension ByteReader {
    /// Reads a stored entity index and gives the model's index for it.
    @inline(__always)
    mutating func entity() throws(FileStoreError) -> Int32 {
        let stored = try i32()
        return numbering.map { $0.model(stored) } ?? stored
    }

    /// The model's index for stored entity index `stored`.
    @inline(__always)
    func modelEntity(_ stored: Int32) -> Int32 {
        numbering.map { $0.model(stored) } ?? stored
    }
}

extension ByteWriter {
    /// Writes the stored index of model entity `model`.
    @inline(__always)
    mutating func entity(_ model: Int32) {
        i32(numbering.map { $0.stored(model) } ?? model)
    }
}
