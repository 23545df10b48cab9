import Foundation
import PersistenceKit

// A small sales model for dictionary fetches and aggregates, seeded with known rows whose
// expected results the tests compute from `SalesFixture.rows`.

final class Sale: NSManagedObject {
    @Attribute var product: String = ""
    @Attribute var region: String = ""
    @Attribute var price: Double = 0
    @Attribute var quantity: Int64 = 0
    @Attribute var note: String?
    @Relationship(inverse: "sales", deleteRule: .nullifyDeleteRule) var outlet: Outlet?

    /// Not an attribute: a predicate reading it runs on objects.
    var isExpensive: Bool { price > 2 }
}

final class Outlet: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "outlet", deleteRule: .nullifyDeleteRule) var sales: Set<Sale>
}

/// One seeded sale.
struct SaleRow: Sendable {
    var product: String
    var region: String
    var price: Double
    var quantity: Int64
    var note: String?
    /// "A", "B" or none.
    var outlet: String?
}

/// A container of the sales model on the in-memory or the file store, with `rows` saved.
final class SalesFixture {
    static let rows: [SaleRow] = [
        SaleRow(product: "apple", region: "north", price: 1.5, quantity: 10, note: "fresh", outlet: "A"),
        SaleRow(product: "apple", region: "south", price: 2.5, quantity: 4, note: nil, outlet: "B"),
        SaleRow(product: "pear", region: "north", price: 3.0, quantity: 7, note: nil, outlet: "A"),
        SaleRow(product: "pear", region: "north", price: 1.0, quantity: 1, note: "bruised", outlet: nil),
        SaleRow(product: "plum", region: "south", price: 4.0, quantity: 2, note: nil, outlet: "B"),
    ]

    let container: NSPersistentContainer
    let context: NSManagedObjectContext
    /// The outlets' IDs by name.
    private(set) var outlets: [String: NSManagedObjectID] = [:]
    private let folder: URL?

    /// `kind` is "memory" or "file".
    init(_ kind: String, name: String = #function, seeded: Bool = true) throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Sale.self, Outlet.self])
        if kind == "file" {
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("PersistenceKitTests-sales-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            folder = dir
            container = try FSSupport.container(at: dir.appendingPathComponent("store.pkstore"), model: model, name: name)
        } else {
            folder = nil
            container = try OTSupport.container(model: model, name: name)
        }
        context = container.newBackgroundContext()
        if seeded { try seed() }
    }

    deinit {
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }

    private func seed() throws {
        let ctx = context
        outlets = try ctx.performAndWait {
            var made: [String: Outlet] = [:]
            for name in ["A", "B"] {
                let o = Outlet(context: ctx)
                o.name = name
                made[name] = o
            }
            for r in Self.rows {
                let s = Sale(context: ctx)
                s.product = r.product
                s.region = r.region
                s.price = r.price
                s.quantity = r.quantity
                s.note = r.note
                s.outlet = r.outlet.flatMap { made[$0] }
            }
            try ctx.save()
            return made.mapValues(\.objectID)
        }
    }

    /// A dictionary request for sales.
    static func request() -> NSFetchRequest<NSDictionary> {
        let request = NSFetchRequest<NSDictionary>(entityName: "Sale")
        request.resultType = .dictionaryResultType
        return request
    }

    /// Runs `request` on the fixture's context.
    func fetch(_ request: NSFetchRequest<NSDictionary>) throws -> [NSDictionary] {
        try context.performAndWait { try context.fetch(request) }
    }
}

/// An expression description, as Core Data code builds one.
func aggregate(_ name: String, _ function: String, _ keyPath: String, _ type: NSAttributeType = .undefinedAttributeType)
    -> NSExpressionDescription
{
    let d = NSExpressionDescription()
    d.name = name
    d.expression = NSExpression(forFunction: function, arguments: [NSExpression(forKeyPath: keyPath)])
    d.expressionResultType = type
    return d
}
