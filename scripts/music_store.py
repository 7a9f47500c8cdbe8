#!/usr/bin/env python3
"""A music store database made here, with 24 questions and gold queries: a
check on a schema none of the benchmarks holds (a table that refers to
itself, a table of pairs keyed by both columns, names that occur in
several tables, dates as ISO text).

Usage: scripts/music_store.py OUT_DIR

OUT_DIR gets `dev.json` and `database/music_store/music_store.sqlite` (rows
drawn with a fixed seed, so every run makes the same file); run it with
`iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

out = out_dir(__doc__)
random.seed(7)
db = 'music_store'
c = database(out, db)
c.executescript('''
CREATE TABLE employees (employee_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, title TEXT, reports_to INTEGER REFERENCES employees(employee_id), hire_date TEXT, city TEXT);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, city TEXT, country TEXT, email TEXT, support_rep_id INTEGER REFERENCES employees(employee_id));
CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER REFERENCES artists(artist_id), release_year INTEGER);
CREATE TABLE genres (genre_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT, album_id INTEGER REFERENCES albums(album_id), genre_id INTEGER REFERENCES genres(genre_id), composer TEXT, milliseconds INTEGER, unit_price REAL);
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(customer_id), invoice_date TEXT, billing_city TEXT, billing_country TEXT, total REAL);
CREATE TABLE invoice_lines (invoice_line_id INTEGER PRIMARY KEY, invoice_id INTEGER REFERENCES invoices(invoice_id), track_id INTEGER REFERENCES tracks(track_id), unit_price REAL, quantity INTEGER);
CREATE TABLE playlists (playlist_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE playlist_tracks (playlist_id INTEGER REFERENCES playlists(playlist_id), track_id INTEGER REFERENCES tracks(track_id), PRIMARY KEY (playlist_id, track_id));
''')
emps=[(1,'Andrew','Adams','General Manager',None,'2016-08-14','Edmonton'),(2,'Nancy','Edwards','Sales Manager',1,'2017-05-01','Calgary'),
(3,'Jane','Peacock','Sales Support Agent',2,'2018-04-01','Calgary'),(4,'Margaret','Park','Sales Support Agent',2,'2019-05-03','Calgary'),
(5,'Steve','Johnson','Sales Support Agent',2,'2021-10-17','Calgary'),(6,'Michael','Mitchell','IT Manager',1,'2018-10-17','Calgary'),
(7,'Robert','King','IT Staff',6,'2020-01-02','Lethbridge'),(8,'Laura','Callahan','IT Staff',6,'2022-03-04','Lethbridge')]
c.executemany('INSERT INTO employees VALUES (?,?,?,?,?,?,?)',emps)
firsts=['Luis','Leonie','Francois','Bjorn','Frantisek','Helena','Astrid','Daan','Kara','Eduardo','Alexandre','Roberto','Fernanda','Mark','Jennifer','Frank','Jack','Michelle','Tim','Dan','Kathy','Heather','John','Victor','Richard','Patrick','Julia','Robert','Madalena','Hannah']
lasts=['Goncalves','Kohler','Tremblay','Hansen','Wichterlova','Holy','Gruber','Peeters','Nielsen','Martins','Rocha','Almeida','Ramos','Philips','Peterson','Harris','Smith','Brooks','Goyer','Miller','Chase','Gordon','Gray','Stevens','Cunningham','Murray','Barnett','Brown','Sampaio','Schneider']
places=[('Sao Paulo','Brazil'),('Calgary','Canada'),('Stuttgart','Germany'),('Montreal','Canada'),('Oslo','Norway'),('Prague','Czech Republic'),('Vienna','Austria'),('Brussels','Belgium'),('Copenhagen','Denmark'),('Rio de Janeiro','Brazil'),('Toronto','Canada'),('Berlin','Germany'),('Paris','France'),('Lyon','France'),('New York','USA'),('Chicago','USA'),('Boston','USA')]
custs=[]
for i in range(30):
    city,country=places[i%len(places)]
    custs.append((i+1,firsts[i],lasts[i],city,country,f'{firsts[i].lower()}.{lasts[i].lower()}@mail.com',random.choice([3,4,5])))
c.executemany('INSERT INTO customers VALUES (?,?,?,?,?,?,?)',custs)
artists=['AC/DC','Aerosmith','Miles Davis','Antonio Carlos Jobim','Metallica','Queen','Eric Clapton','Ludwig van Beethoven','U2','Nirvana']
c.executemany('INSERT INTO artists VALUES (?,?)',list(enumerate(artists,1)))
genres=['Rock','Jazz','Metal','Latin','Classical','Blues','Alternative']
c.executemany('INSERT INTO genres VALUES (?,?)',list(enumerate(genres,1)))
agenre={1:1,2:1,3:2,4:4,5:3,6:1,7:6,8:5,9:1,10:7}
albums=[];aid=1
titles=['Back in Black','Big Ones','Kind of Blue','Wave','Master of Puppets','Ride the Lightning','Greatest Hits','A Night at the Opera','Unplugged','Symphony No. 5','Achtung Baby','The Joshua Tree','Nevermind','In Utero','Let There Be Rock','Bitches Brew']
owner=[1,2,3,4,5,5,6,6,7,8,9,9,10,10,1,3]
years=[1980,1994,1959,1967,1986,1984,1981,1975,1992,1808,1991,1987,1991,1993,1977,1970]
for t,o,y in zip(titles,owner,years): albums.append((aid,t,o,y)); aid+=1
c.executemany('INSERT INTO albums VALUES (?,?,?,?)',albums)
words=['Love','Night','Fire','Blue','Road','Heart','Dream','Rain','Stone','Light','Shadow','River','Storm','Gold','Star']
tracks=[];tid=1
for (a,t,o,y) in albums:
    for k in range(random.randint(4,9)):
        name=f'{random.choice(words)} {random.choice(words)}' if k else f'{t} (Title Track)'
        g=agenre[o] if random.random()<0.9 else random.randint(1,7)
        tracks.append((tid,name,a,g,random.choice([None,'Angus Young','Steven Tyler','Miles Davis','James Hetfield','Freddie Mercury','Bono']) ,random.randint(120000,480000),random.choice([0.99,0.99,0.99,1.99])))
        tid+=1
c.executemany('INSERT INTO tracks VALUES (?,?,?,?,?,?,?)',tracks)
inv=[];lines=[];lid=1
for iid in range(1,121):
    cu=random.choice(custs)
    d=f'{random.choice([2022,2023,2024])}-{random.randint(1,12):02d}-{random.randint(1,28):02d}'
    tot=0.0
    for _ in range(random.randint(1,5)):
        tr=random.choice(tracks);q=random.choice([1,1,1,2])
        lines.append((lid,iid,tr[0],tr[6],q));lid+=1;tot+=tr[6]*q
    inv.append((iid,cu[0],d,cu[3],cu[4],round(tot,2)))
c.executemany('INSERT INTO invoices VALUES (?,?,?,?,?,?)',inv)
c.executemany('INSERT INTO invoice_lines VALUES (?,?,?,?,?)',lines)
c.executemany('INSERT INTO playlists VALUES (?,?)',list(enumerate(['Music','Workout','Classical Favourites','Road Trip','Chill'],1)))
pt=set()
for p_ in range(1,6):
    pool=[t for t in tracks if t[3] in (2,5)] if p_==3 else tracks
    for tr in random.sample(pool,min(len(pool),random.randint(8,20))): pt.add((p_,tr[0]))
c.executemany('INSERT INTO playlist_tracks VALUES (?,?)',sorted(pt))
# A bonus track, drawn after every other row, so that one album has the
# most tracks (three tied before).
nevermind = next(a for (a, t, _, _) in albums if t == 'Nevermind')
c.execute('INSERT INTO tracks VALUES (?,?,?,?,?,?,?)',
          (tid, 'Endless, Nameless', nevermind, 7, 'Kurt Cobain', 402000, 0.99))
c.commit()
Q=[
("Who does Jane Peacock report to? Give the first and last name.","SELECT m.first_name, m.last_name FROM employees e JOIN employees m ON e.reports_to = m.employee_id WHERE e.first_name='Jane' AND e.last_name='Peacock'"),
("How many employees report directly to the General Manager?","SELECT COUNT(*) FROM employees WHERE reports_to = (SELECT employee_id FROM employees WHERE title='General Manager')"),
("Which customer spent the most in total? Give the first and last name.","SELECT c.first_name, c.last_name FROM customers c JOIN invoices i ON c.customer_id=i.customer_id GROUP BY c.customer_id ORDER BY SUM(i.total) DESC LIMIT 1"),
("How many tracks are in the Workout playlist?","SELECT COUNT(*) FROM playlist_tracks pt JOIN playlists p ON pt.playlist_id=p.playlist_id WHERE p.name='Workout'"),
("Which genre sold the most units?","SELECT g.name FROM genres g JOIN tracks t ON g.genre_id=t.genre_id JOIN invoice_lines l ON t.track_id=l.track_id GROUP BY g.genre_id ORDER BY SUM(l.quantity) DESC LIMIT 1"),
("Which artists have more than one album? List their names.","SELECT a.name FROM artists a JOIN albums al ON a.artist_id=al.artist_id GROUP BY a.artist_id HAVING COUNT(*)>1"),
("What is the total invoiced per billing country in 2024? Show the country and the total.","SELECT billing_country, SUM(total) FROM invoices WHERE invoice_date LIKE '2024%' GROUP BY billing_country"),
("Which employees support no customers? Give their first and last names.","SELECT first_name, last_name FROM employees WHERE employee_id NOT IN (SELECT support_rep_id FROM customers)"),
("How many tracks are not on any playlist?","SELECT COUNT(*) FROM tracks WHERE track_id NOT IN (SELECT track_id FROM playlist_tracks)"),
("How many invoices were issued in March 2023?","SELECT COUNT(*) FROM invoices WHERE invoice_date LIKE '2023-03%'"),
("How many customers does Steve Johnson support?","SELECT COUNT(*) FROM customers c JOIN employees e ON c.support_rep_id=e.employee_id WHERE e.first_name='Steve' AND e.last_name='Johnson'"),
("What is the name of the longest track and the title of its album?","SELECT t.name, a.title FROM tracks t JOIN albums a ON t.album_id=a.album_id ORDER BY t.milliseconds DESC LIMIT 1"),
("How many different customers bought at least one Jazz track?","SELECT COUNT(DISTINCT i.customer_id) FROM invoices i JOIN invoice_lines l ON i.invoice_id=l.invoice_id JOIN tracks t ON l.track_id=t.track_id JOIN genres g ON t.genre_id=g.genre_id WHERE g.name='Jazz'"),
("For each manager, how many people report to them? Show the manager's last name and the count.","SELECT m.last_name, COUNT(*) FROM employees e JOIN employees m ON e.reports_to=m.employee_id GROUP BY m.employee_id"),
("Which album has the most tracks?","SELECT a.title FROM albums a JOIN tracks t ON a.album_id=t.album_id GROUP BY a.album_id ORDER BY COUNT(*) DESC LIMIT 1"),
("List the emails of customers who bought a track by Queen.","SELECT DISTINCT c.email FROM customers c JOIN invoices i ON c.customer_id=i.customer_id JOIN invoice_lines l ON i.invoice_id=l.invoice_id JOIN tracks t ON l.track_id=t.track_id JOIN albums a ON t.album_id=a.album_id JOIN artists ar ON a.artist_id=ar.artist_id WHERE ar.name='Queen'"),
("What is the average length of a Metal track in minutes?","SELECT AVG(t.milliseconds)/60000.0 FROM tracks t JOIN genres g ON t.genre_id=g.genre_id WHERE g.name='Metal'"),
("Which country has the most customers?","SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1"),
("What are the titles of albums released before 1980?","SELECT title FROM albums WHERE release_year < 1980"),
("How many tracks have no composer recorded?","SELECT COUNT(*) FROM tracks WHERE composer IS NULL"),
("Which employee was hired most recently? Give the full name.","SELECT first_name, last_name FROM employees ORDER BY hire_date DESC LIMIT 1"),
("What is the total revenue from tracks on the album Nevermind?","SELECT SUM(l.unit_price*l.quantity) FROM invoice_lines l JOIN tracks t ON l.track_id=t.track_id JOIN albums a ON t.album_id=a.album_id WHERE a.title='Nevermind'"),
("Which customers live in the same city as their support representative? Give their first names.","SELECT c.first_name FROM customers c JOIN employees e ON c.support_rep_id=e.employee_id WHERE c.city=e.city"),
("Name the playlists that contain no Rock track.","SELECT name FROM playlists WHERE playlist_id NOT IN (SELECT pt.playlist_id FROM playlist_tracks pt JOIN tracks t ON pt.track_id=t.track_id JOIN genres g ON t.genre_id=g.genre_id WHERE g.name='Rock')"),
]
write_questions(out, [(db, q, s) for q, s in Q])
