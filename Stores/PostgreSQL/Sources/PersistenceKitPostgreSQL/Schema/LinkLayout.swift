import Foundation
import PersistenceKit

/// Which end of each link the store keeps in a column, and how the other end is read.
///
/// Each link has one owning end (the rule of the root package's link keeping, which the
/// file store follows too): the to-one end of a one-to-many, and of two to-many ends the one
/// whose (entity name, relationship name) sorts first. The owning end is a column: a to-one
/// a `bigint` key (indexed), a to-many a `bigint[]` of keys (with a GIN index when the other
/// end is derived from it). The other end of a one-to-many or many-to-many is *derived*: it
/// has no column and is read from the owning end's column with a subquery. So a save that
/// puts one book on a shelf of 50,000 writes the book's key column, never the shelf's list.
///
/// Ends that are stored although not owning: an ordered to-many (its order is the
/// writer's, kept in its array), a relationship that is its own inverse, a to-one end of a
/// one-to-one, and a to-many with no inverse.
enum LinkLayout {
    /// The layout version this build writes and reads (recorded in `_pk_metadata` under
    /// ``PostgreSQLStore/layoutVersionKey``): 2 derives the non-owning to-many ends; 1 (no
    /// version recorded) stored every to-many end as an array.
    static let version = "2"

    /// Whether `r`, a stored relationship of `entity`, owns its links (see the type's
    /// comment). A relationship without an inverse owns its links.
    static func owns(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard let inverse = r.inverseRelationship, !inverse.isTransient, let destination = r.destinationEntity else { return true }
        if r.isToMany != inverse.isToMany { return !r.isToMany }
        // By the entities that declare the two ends, as the root package's link keeping
        // decides: every entity of a family inherits a relationship and must agree.
        return (r.entity?.name ?? entity.name, r.name) <= (inverse.entity?.name ?? destination.name, inverse.name)
    }

    /// Whether `r` has no column and is read from its inverse's column instead.
    static func isDerived(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard r.isToMany, !r.isOrdered, let inverse = r.inverseRelationship, !inverse.isTransient, inverse !== r else { return false }
        return !owns(r, of: entity)
    }
}

/// A to-many end with no column: the rows of its destination whose owning column links to
/// the row (a shelf's `books`: the books whose `shelf` is the shelf).
struct DerivedEnd: Sendable {
    /// The relationship's property index in its entity.
    let property: Int
    /// The relationship's name.
    let name: String
    /// The destination entity, whose table holds the owning column.
    let destination: Int32
    /// The destination's table, schema-qualified and quoted.
    let sourceTable: String
    /// The owning column (the inverse), quoted.
    let sourceColumn: String
    /// The owning column's name, unquoted.
    let sourceColumnName: String
    /// Whether the owning column is a to-many key list (a many-to-many) rather than a key.
    let sourceIsList: Bool

    /// The condition that a row `alias` of the destination links to the row whose key is
    /// `key` (an SQL expression). A key list is tested with `@>`, which its GIN index serves.
    func links(_ alias: String, to key: String) -> String {
        sourceIsList ? "\(alias).\(sourceColumn) @> ARRAY[\(key)]::bigint[]" : "\(alias).\(sourceColumn) = \(key)"
    }

    /// The keys of the rows linking to the row whose key is `key`, ascending, as a
    /// `bigint[]` expression (empty, never NULL).
    func keys(of key: String) -> String {
        "ARRAY(SELECT pkd.\"_pk\" FROM \(sourceTable) pkd WHERE \(links("pkd", to: key)) ORDER BY pkd.\"_pk\")"
    }
}
