import Foundation
import PersistenceKit

/// Which end of each link the store keeps, where, and how the other end is read.
///
/// Each link has one owning end (the rule of the root package's link keeping, which the
/// file store follows too): the to-one end of a one-to-many, and of two to-many ends the one
/// whose (entity name, relationship name) sorts first. Only the owning end is written:
/// - a to-one is a `bigint` key column (indexed), and the to-many end of a one-to-many has
///   no column: it is read from that key column (`… WHERE "shelf" = <the shelf's key>`);
/// - an unordered many-to-many is a join table (`source`, `target`: the owning row and the
///   other; primary key on both, an index on (`target`, `source`)), and neither end has a
///   column;
/// - an ordered owning to-many keeps its order in a `bigint[]` column, from which an
///   unordered other end is read (`@>`, with a GIN index).
/// So a save that puts one book on a shelf of 50,000 writes the book's key column, never
/// the shelf's list, and adding one link of a many-to-many inserts one join row.
///
/// Ends that are stored although not owning (their own `bigint[]` column, kept by the root
/// package's link keeping): an ordered to-many (its order is the writer's), a relationship
/// that is its own inverse, and the to-one end of a one-to-one. A relationship without an
/// inverse is its own owning end.
enum LinkLayout {
    /// The layout version this build writes and reads (recorded in `_pk_metadata` under
    /// ``PostgreSQLStore/layoutVersionKey``): 2 reads the non-owning to-many ends from the
    /// owning ends and keeps many-to-manys in join tables; 1 (no version recorded) stored
    /// every to-many end as a key list.
    static let version = "2"

    /// The layout version of a store whose model has a to-one, a join table or a key list
    /// into an entity family (kept with entities, see ``EntityFamilyLinks``): 3, so that builds that
    /// read only version 2 refuse it rather than read such links as the destination entity.
    static let familyVersion = "3"

    /// The layout version of a store of `layouts`.
    static func version(of layouts: [TableLayout]) -> String {
        EntityFamilyLinks.hasFamilyLinks(layouts) ? familyVersion : version
    }

    /// Whether `r`, a stored relationship of `entity`, owns its links (see the type's
    /// comment). A relationship without an inverse owns its links.
    static func owns(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard let inverse = r.inverseRelationship, !inverse.isTransient, let destination = r.destinationEntity else { return true }
        if r.isToMany != inverse.isToMany { return !r.isToMany }
        // By the entities that declare the two ends, as the root package's link keeping
        // decides: every entity of a family inherits a relationship and must agree.
        return (r.entity?.name ?? entity.name, r.name) <= (inverse.entity?.name ?? destination.name, inverse.name)
    }

    /// Whether `r` is the owning end of a many-to-many kept in a join table.
    static func isJoined(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard r.isToMany, !r.isOrdered, let inverse = r.inverseRelationship, !inverse.isTransient, inverse.isToMany, inverse !== r
        else { return false }
        return owns(r, of: entity)
    }

    /// Whether `r` has no column and is read from its inverse's column or join table.
    static func isDerived(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard r.isToMany, !r.isOrdered, let inverse = r.inverseRelationship, !inverse.isTransient, inverse !== r else { return false }
        return !owns(r, of: entity)
    }

    /// The join table of the many-to-many whose owning end is `r` (declared by entity
    /// `owner`), unquoted: `_pk_link_<entity>_<relationship>`, within PostgreSQL's 63 bytes
    /// for names (a longer one is cut and ends with a hash of the whole, so two stay apart).
    static func joinTableName(owner: String, relationship: String) -> String {
        let whole = "_pk_link_\(owner)_\(relationship)"
        guard whole.utf8.count > 63 else { return whole }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in whole.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        let tail = "_" + String(h, radix: 16)
        var head = ""
        for ch in whole {
            guard head.utf8.count + String(ch).utf8.count + tail.utf8.count <= 63 else { break }
            head.append(ch)
        }
        return head + tail
    }
}

/// A to-many end with no column in its row, read with a subquery: the to-many end of a
/// one-to-many (from the destination's key column), the unordered end of a many-to-many
/// whose owning end is an ordered list (from that list), or either end of a many-to-many
/// kept in a join table.
struct DerivedEnd: Sendable {
    /// Where the end's links are read from.
    enum Source: Sendable, Equatable {
        /// The destination's key column `match` (a one-to-many).
        case key
        /// The destination's key list `match` (an ordered owning many-to-many end).
        case list
        /// The join table `table` (columns `source`, `target`); `owns`: this end is its
        /// `source` (the owning end), which a save writes.
        case join(owns: Bool)
    }

    /// The relationship's property index in its entity.
    let property: Int
    /// The relationship's name.
    let name: String
    /// The destination entity.
    let destination: Int32
    let source: Source
    /// The table read: the destination's, or the join table; schema-qualified and quoted.
    let table: String
    /// The table's name, unquoted (the destination entity's name, or the join table's).
    let tableName: String
    /// The column of `table` compared with the row's key, unquoted.
    let match: String
    /// The column of `table` listed: the destination rows' keys, unquoted.
    let listed: String
    /// For the to-many end of a one-to-many whose destination has sub-entities: every
    /// table of the destination's family, each of which has the inherited key column
    /// `match` (see `DerivedEnd+Family.swift`); empty otherwise.
    var family: [FamilyTable] = []
    /// When the column `match` holds rows of an entity family (a to-one into one, or a join
    /// table's family side): the column of their entities, which must hold ``matchEntity``
    /// (the entity of the rows this end is read for) too.
    var matchEntityColumn: String?
    /// The entity ``matchEntityColumn`` is compared with.
    var matchEntity: Int32 = 0
    /// When the rows listed are of an entity family: the join table's column holding each
    /// listed row's entity (`source_entity` or `target_entity`).
    var listedEntityColumn: String?
    /// When the key list `match` is into an entity family (packed keys, see
    /// ``EntityFamilyLinks/pack(_:)``): the entity of the rows this end is read for.
    var packedEntity: Int32?

    /// Whether the end is the owning end of a join table (a save writes its rows).
    var ownsJoinTable: Bool { source == .join(owns: true) }

    /// The condition that row `alias` of `table` links to the row whose key is `key` (an
    /// SQL expression). A key list is tested with `@>`, which its GIN index serves.
    func reaches(_ alias: String, _ key: String) -> String {
        // Into an entity family, the list holds packed keys and the column its entity.
        source == .list
            ? "\(alias).\(quote(match)) @> ARRAY[\(EntityFamilyLinks.packed(key, packedEntity))]::bigint[]"
            : "\(alias).\(quote(match)) = \(key)" + entityTest(alias)
    }

    /// The condition that row `alias` of the destination is linked from the row whose key
    /// is `key`.
    func links(_ alias: String, to key: String) -> String {
        guard case .join = source else { return reaches(alias, key) }
        return "\(alias).\"_pk\" IN (SELECT pkj.\(quote(listed)) FROM \(table) pkj WHERE \(reaches("pkj", key)))"
    }

    /// The keys of the rows linked from the row whose key is `key`, ascending, as a
    /// `bigint[]` expression (empty, never NULL).
    func keys(of key: String) -> String {
        // A family's links name their entities: a text list (`familyKeys`), not keys alone.
        if spansFamily { return familyKeys(of: key) }
        if listedEntityColumn != nil { return joinedFamilyKeys(of: key) }
        return "ARRAY(SELECT pkd.\(quote(listed)) FROM \(table) pkd WHERE \(reaches("pkd", key)) ORDER BY pkd.\(quote(listed)))"
    }

    /// The number of rows linked from the row whose key is `key`, as an SQL expression.
    func count(of key: String) -> String {
        if spansFamily { return familyCount(of: key) }
        return "(SELECT count(*) FROM \(table) pkc WHERE \(reaches("pkc", key)))"
    }

    /// The same end with its table under `schema` named `name` (a migration reads ends of
    /// the old layout after their tables were renamed).
    func reading(schema: String, tableName name: String) -> DerivedEnd {
        DerivedEnd(
            property: property, name: self.name, destination: destination, source: source, table: "\(quote(schema)).\(quote(name))",
            tableName: name, match: match, listed: listed)
    }
}
