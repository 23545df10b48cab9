import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// Every vehicle as "entity:plate:vin", sorted.
    static func fleetLines(_ context: NSManagedObjectContext) throws -> [String] {
        try all(SBVehicle.self, in: context).map { v in
            let vin = (v as? SBCar)?.vin ?? (v as? SBTruck)?.vin
            return "\(v.entity.name):\(v.plate):\(vin ?? "-")"
        }.sorted()
    }

    /// Saves what `insert` makes in a context of `container`; the save's error, or nil.
    static func saveError(_ container: NSPersistentContainer, _ insert: @escaping (NSManagedObjectContext) throws -> Void) async throws
        -> CoreDataError?
    {
        try await inContext(container) { context -> CoreDataError? in
            try insert(context)
            do {
                try context.save()
                return nil
            } catch let error as CoreDataError {
                return error
            }
        }
    }

    static func car(_ context: NSManagedObjectContext, _ plate: String, vin: String? = nil) {
        let car = SBCar(context: context)
        car.plate = plate
        car.vin = vin
    }

    static func truck(_ context: NSManagedObjectContext, _ plate: String, vin: String? = nil) {
        let truck = SBTruck(context: context)
        truck.plate = plate
        truck.vin = vin
    }

    static func familyUniqueness(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.fleet) { checked in
            let a = try await checked.open("A")
            #expect(try await saveError(a) { car($0, "P1", vin: "V1") } == nil)
            // Another coordinator's truck with the car's plate: the constraint `SBVehicle`
            // declares spans cars and trucks, stored in whatever way the store keeps them.
            let b = try await checked.open("B")
            let clash = try #require(try await saveError(b) { truck($0, "P1") }, "a truck took a car's plate")
            #expect(clash.code == .managedObjectConstraintMerge)
            let conflict = try #require(clash.constraintConflicts.first)
            #expect(conflict.constraint == ["plate"])
            #expect(conflict.constraintValues["plate"] as? String == "P1")
            #expect(conflict.databaseObject?.entity.name == "SBCar", "the conflict names the stored car")
            // One save with a car and a truck sharing a plate.
            let twins = try await saveError(b) { context in
                car(context, "P2")
                truck(context, "P2")
            }
            #expect(twins?.code == .managedObjectConstraintMerge)
            // A sub-entity's own constraint holds among its own objects: a truck may share a
            // car's vin, not another truck's.
            #expect(try await saveError(b) { truck($0, "P3", vin: "V1") } == nil)
            #expect(try await saveError(a) { truck($0, "P4", vin: "V1") }?.code == .managedObjectConstraintMerge)
            #expect(try await inContext(try await checked.reopen(), fleetLines) == ["SBCar:P1:V1", "SBTruck:P3:V1"])
        }
        // A truck renamed to a car's plate is refused; once the car is deleted (by another
        // coordinator) the same rename goes through, and the freed plate is the truck's.
        try await withStore(store, BehaviourModels.fleet) { checked in
            #expect(try await saveError(try await checked.open("A")) { context in
                car(context, "P1")
                truck(context, "P2")
            } == nil)
            let b = try await checked.open("B")
            let contextB = b.newBackgroundContext()
            try contextB.performAndWait {
                let truck = try #require(try all(SBTruck.self, in: contextB).first)
                truck.plate = "P1"
                let error = try #require(throws: CoreDataError.self) { try contextB.save() }
                #expect(error.code == .managedObjectConstraintMerge)
            }
            try await inContext(try await checked.open("C")) { context in
                for car in try all(SBCar.self, in: context) { context.delete(car) }
                try context.save()
            }
            try contextB.performAndWait { try contextB.save() }
            let d = try await checked.open("D")
            #expect(try await saveError(d) { car($0, "P2") } == nil, "the truck's old plate is free")
            #expect(try await inContext(try await checked.reopen(), fleetLines) == ["SBCar:P2:-", "SBTruck:P1:-"])
        }
    }
}
