#!/usr/bin/env python3
"""A clinic database made here, with 24 questions and gold queries: a check
on how databases often store things that none of the benchmarks stress
(money kept in cents, yes/no flags as 0/1 and as 'Y'/'N', statuses in
lower case, a missing insurer as NULL, appointment times with hours, a
specialty referred to by a text code).

Usage: scripts/clinic.py OUT_DIR

OUT_DIR gets `dev.json` and `database/clinic/clinic.sqlite` (rows drawn
with a fixed seed, so every run makes the same file); run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

out = out_dir(__doc__)
random.seed(12)
db = 'clinic'
c = database(out, db)
c.executescript('''
CREATE TABLE insurers (insurer_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, sex TEXT, birth_date TEXT, city TEXT, smoker INTEGER, insurer_id INTEGER REFERENCES insurers(insurer_id));
CREATE TABLE specialties (code TEXT PRIMARY KEY, title TEXT);
CREATE TABLE doctors (doctor_id INTEGER PRIMARY KEY, full_name TEXT, specialty TEXT REFERENCES specialties(code), active TEXT, hired_on TEXT);
CREATE TABLE appointments (appointment_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES patients(patient_id), doctor_id INTEGER REFERENCES doctors(doctor_id), starts_at TEXT, status TEXT, fee_cents INTEGER);
CREATE TABLE drugs (drug_id INTEGER PRIMARY KEY, name TEXT, generic INTEGER, unit_price_cents INTEGER);
CREATE TABLE prescriptions (prescription_id INTEGER PRIMARY KEY, appointment_id INTEGER REFERENCES appointments(appointment_id), drug_id INTEGER REFERENCES drugs(drug_id), dose_mg REAL, days INTEGER);
CREATE TABLE lab_results (result_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES patients(patient_id), test TEXT, value REAL, taken_on TEXT);
''')
c.executemany('INSERT INTO insurers VALUES (?,?)', list(enumerate(['Aetna', 'Cigna', 'Humana', 'Kaiser'], 1)))
specialties = [('CARD', 'Cardiology'), ('DERM', 'Dermatology'), ('PED', 'Pediatrics'), ('GP', 'General Practice'), ('ORTH', 'Orthopedics')]
c.executemany('INSERT INTO specialties VALUES (?,?)', specialties)
doctors = [(1, 'Dr. Alice Grant', 'CARD', 'Y', '2015-03-01'), (2, 'Dr. Omar Haddad', 'CARD', 'Y', '2019-07-15'),
           (3, 'Dr. Priya Nair', 'DERM', 'N', '2012-01-10'), (4, 'Dr. Tom Becker', 'GP', 'Y', '2021-09-01'),
           (5, 'Dr. Lena Vogel', 'GP', 'Y', '2022-02-14'), (6, 'Dr. Sam Okafor', 'GP', 'N', '2016-05-20'),
           (7, 'Dr. Rosa Diaz', 'PED', 'Y', '2018-11-05'), (8, 'Dr. Ken Sato', 'ORTH', 'Y', '2023-04-03')]
c.executemany('INSERT INTO doctors VALUES (?,?,?,?,?)', doctors)
firsts = ['Maria', 'James', 'Linda', 'Robert', 'Susan', 'Michael', 'Karen', 'David', 'Nancy', 'Daniel', 'Betty', 'Paul', 'Sandra', 'Mark', 'Ashley', 'Steven', 'Emily', 'Kevin', 'Donna', 'Brian', 'Carol', 'George', 'Ruth', 'Edward', 'Sharon', 'Jason', 'Laura', 'Ryan', 'Helen', 'Gary']
lasts = ['Lopez', 'Smith', 'Johnson', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Wilson', 'Moore', 'Taylor', 'Thomas', 'Moore', 'Martin', 'Lee', 'White', 'Harris', 'Clark', 'Lewis', 'Young', 'Walker', 'Hall', 'Allen', 'King', 'Wright', 'Scott', 'Green', 'Baker', 'Adams', 'Nelson']
cities = ['Boston', 'Boston', 'Cambridge', 'Somerville', 'Quincy', 'Boston', 'Newton']
patients = []
for i in range(30):
    sex = 'F' if firsts[i] in ('Maria', 'Linda', 'Susan', 'Karen', 'Nancy', 'Betty', 'Sandra', 'Ashley', 'Emily', 'Donna', 'Carol', 'Ruth', 'Sharon', 'Laura', 'Helen') else 'M'
    birth = f'{random.randint(1940, 2015)}-{random.randint(1, 12):02d}-{random.randint(1, 28):02d}'
    insurer = None if random.random() < 0.2 else random.randint(1, 4)
    patients.append((i + 1, firsts[i], lasts[i], sex, birth, random.choice(cities), int(random.random() < 0.3), insurer))
c.executemany('INSERT INTO patients VALUES (?,?,?,?,?,?,?,?)', patients)
fees = {'CARD': 25000, 'DERM': 18000, 'PED': 12000, 'GP': 9000, 'ORTH': 22000}
appointments = []
for a in range(1, 121):
    # The last three patients never came.
    patient = random.randint(1, 27)
    doctor = random.choice(doctors)
    when = f'{random.choice([2023, 2024, 2024])}-{random.randint(1, 12):02d}-{random.randint(1, 28):02d} {random.choice([8, 9, 9, 10, 11, 13, 14, 15, 16]):02d}:{random.choice(["00", "15", "30", "45"])}'
    status = random.choices(['completed', 'cancelled', 'no-show'], [0.75, 0.15, 0.10])[0]
    appointments.append((a, patient, doctor[0], when, status, fees[doctor[2]] + random.choice([0, 0, 1500, 2500])))
c.executemany('INSERT INTO appointments VALUES (?,?,?,?,?,?)', appointments)
drugs = [(1, 'Atorvastatin', 1, 45), (2, 'Lipitor', 0, 390), (3, 'Metformin', 1, 20), (4, 'Amoxicillin', 1, 35),
         (5, 'Ibuprofen', 1, 12), (6, 'Eliquis', 0, 820), (7, 'Lisinopril', 1, 18), (8, 'Humira', 0, 31000)]
c.executemany('INSERT INTO drugs VALUES (?,?,?,?)', drugs)
prescriptions = []
completed = [a for a in appointments if a[4] == 'completed']
for n in range(1, 81):
    a = random.choice(completed)
    drug = random.choices(drugs[:7], [6, 1, 4, 3, 3, 1, 2])[0]
    prescriptions.append((n, a[0], drug[0], random.choice([10, 20, 40, 250, 500]), random.choice([7, 10, 14, 30, 30, 90])))
c.executemany('INSERT INTO prescriptions VALUES (?,?,?,?,?)', prescriptions)
results = []
for n in range(1, 91):
    test = random.choice(['HbA1c', 'LDL', 'Glucose'])
    value = {'HbA1c': round(random.uniform(4.8, 8.5), 1), 'LDL': random.randint(70, 210), 'Glucose': random.randint(70, 180)}[test]
    results.append((n, random.randint(1, 30), test, value, f'{random.choice([2023, 2024])}-{random.randint(1, 12):02d}-{random.randint(1, 28):02d}'))
# Maria Lopez's LDL over time, so "most recent" has one answer.
results += [(91, 1, 'LDL', 162, '2023-02-10'), (92, 1, 'LDL', 141, '2024-06-02'), (93, 1, 'LDL', 129, '2024-11-20')]
c.executemany('INSERT INTO lab_results VALUES (?,?,?,?,?)', results)
c.commit()
Q = [
    ("How many patients smoke?", "SELECT COUNT(*) FROM patients WHERE smoker = 1"),
    ("Which doctors no longer work at the clinic? Give their names.", "SELECT full_name FROM doctors WHERE active = 'N'"),
    ("How many appointments were cancelled?", "SELECT COUNT(*) FROM appointments WHERE status = 'cancelled'"),
    ("What were the total fees, in dollars, of the completed appointments in 2024?", "SELECT SUM(fee_cents) / 100.0 FROM appointments WHERE status = 'completed' AND starts_at LIKE '2024%'"),
    ("What percentage of appointments were no-shows?", "SELECT 100.0 * SUM(status = 'no-show') / COUNT(*) FROM appointments"),
    ("How many patients have no insurance?", "SELECT COUNT(*) FROM patients WHERE insurer_id IS NULL"),
    ("Which specialty has the most doctors? Give its title.", "SELECT s.title FROM specialties s JOIN doctors d ON d.specialty = s.code GROUP BY s.code ORDER BY COUNT(*) DESC LIMIT 1"),
    ("How many appointments start before 10 in the morning?", "SELECT COUNT(*) FROM appointments WHERE time(starts_at) < '10:00'"),
    ("Which generic drug was prescribed most often?", "SELECT d.name FROM drugs d JOIN prescriptions p ON p.drug_id = d.drug_id WHERE d.generic = 1 GROUP BY d.drug_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("Which patients never had an appointment? Give their first and last names.", "SELECT first_name, last_name FROM patients WHERE patient_id NOT IN (SELECT patient_id FROM appointments)"),
    ("How many patients were born before 1970?", "SELECT COUNT(*) FROM patients WHERE birth_date < '1970-01-01'"),
    ("Which doctor completed the most appointments in 2024?", "SELECT d.full_name FROM doctors d JOIN appointments a ON a.doctor_id = d.doctor_id WHERE a.status = 'completed' AND a.starts_at LIKE '2024%' GROUP BY d.doctor_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("How many patients does each insurer cover? Show the insurer's name and the count.", "SELECT i.name, COUNT(*) FROM insurers i JOIN patients p ON p.insurer_id = i.insurer_id GROUP BY i.insurer_id"),
    ("Which patients have seen more than three different doctors? Give their first and last names.", "SELECT p.first_name, p.last_name FROM patients p JOIN appointments a ON a.patient_id = p.patient_id GROUP BY p.patient_id HAVING COUNT(DISTINCT a.doctor_id) > 3"),
    ("What was Maria Lopez's most recent LDL value?", "SELECT r.value FROM lab_results r JOIN patients p ON r.patient_id = p.patient_id WHERE p.first_name = 'Maria' AND p.last_name = 'Lopez' AND r.test = 'LDL' ORDER BY r.taken_on DESC LIMIT 1"),
    ("How many different patients had an HbA1c result above 6.5?", "SELECT COUNT(DISTINCT patient_id) FROM lab_results WHERE test = 'HbA1c' AND value > 6.5"),
    ("What is the average fee, in dollars, of a cardiology appointment?", "SELECT AVG(a.fee_cents) / 100.0 FROM appointments a JOIN doctors d ON a.doctor_id = d.doctor_id JOIN specialties s ON d.specialty = s.code WHERE s.title = 'Cardiology'"),
    ("Which drugs were never prescribed?", "SELECT name FROM drugs WHERE drug_id NOT IN (SELECT drug_id FROM prescriptions)"),
    ("How many female patients live in Boston?", "SELECT COUNT(*) FROM patients WHERE sex = 'F' AND city = 'Boston'"),
    ("What does one unit of Eliquis cost in dollars?", "SELECT unit_price_cents / 100.0 FROM drugs WHERE name = 'Eliquis'"),
    ("Which doctor has the most no-shows?", "SELECT d.full_name FROM doctors d JOIN appointments a ON a.doctor_id = d.doctor_id WHERE a.status = 'no-show' GROUP BY d.doctor_id ORDER BY COUNT(*) DESC LIMIT 1"),
    ("Which active doctors were hired after 2020? Give their names.", "SELECT full_name FROM doctors WHERE active = 'Y' AND hired_on > '2020-12-31'"),
    ("How many prescriptions last longer than 30 days?", "SELECT COUNT(*) FROM prescriptions WHERE days > 30"),
    ("Which city has the most smokers?", "SELECT city FROM patients WHERE smoker = 1 GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1"),
]
write_questions(out, [(db, q, s) for q, s in Q])
