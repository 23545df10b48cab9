import Foundation
import Testing
@testable import PersistenceKit

/// A node related to other nodes, with computed properties that read its attribute or a
/// related node's: the store must never filter those as the attribute itself.
final class PredicateNode: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(.indexed) var rank: Int64 = 0
    @Attribute var link: URL?
    @Relationship(inverse: "children") var parent: PredicateNode?
    @Relationship(inverse: "parent") var children: Set<PredicateNode>
    var lowerName: String { name.lowercased() }
    var displayName: String { name.isEmpty ? "(untitled)" : name }
    var parentName: String { parent!.name }
    var parentOrOwnName: String { parent?.name ?? name }
}
