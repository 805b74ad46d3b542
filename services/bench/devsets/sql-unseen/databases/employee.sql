-- Firebird's EMPLOYEE sample (Debian firebird3.0-examples, InterBase Public License 1.0). See README.md. Load into an empty database with psql -v ON_ERROR_STOP=1 -f.

CREATE TABLE country (
  country text,
  currency text,
  PRIMARY KEY (country)
);

CREATE TABLE job (
  job_code text,
  job_grade smallint,
  job_country text,
  job_title text,
  min_salary numeric(10,2),
  max_salary numeric(10,2),
  PRIMARY KEY (job_code, job_grade, job_country)
);

CREATE TABLE department (
  dept_no text,
  department text,
  head_dept text,
  mngr_no smallint,
  budget numeric(12,2),
  location text,
  phone_no text,
  PRIMARY KEY (dept_no)
);

CREATE TABLE employee (
  emp_no smallint,
  first_name text,
  last_name text,
  phone_ext text,
  hire_date date,
  dept_no text,
  job_code text,
  job_grade smallint,
  job_country text,
  salary numeric(10,2),
  PRIMARY KEY (emp_no)
);

CREATE TABLE project (
  proj_id text,
  proj_name text,
  team_leader smallint,
  product text,
  PRIMARY KEY (proj_id)
);

CREATE TABLE employee_project (
  emp_no smallint,
  proj_id text,
  PRIMARY KEY (emp_no, proj_id)
);

CREATE TABLE proj_dept_budget (
  fiscal_year integer,
  proj_id text,
  dept_no text,
  projected_budget numeric(12,2),
  PRIMARY KEY (fiscal_year, proj_id, dept_no)
);

CREATE TABLE customer (
  cust_no integer,
  customer text,
  contact_first text,
  contact_last text,
  phone_no text,
  address_line1 text,
  address_line2 text,
  city text,
  state_province text,
  country text,
  postal_code text,
  on_hold text,
  PRIMARY KEY (cust_no)
);

CREATE TABLE sales (
  po_number text,
  cust_no integer,
  sales_rep smallint,
  order_status text,
  order_date date,
  ship_date date,
  date_needed date,
  paid text,
  qty_ordered integer,
  total_value numeric(9,2),
  discount double precision,
  item_type text,
  PRIMARY KEY (po_number)
);

INSERT INTO country (country, currency) VALUES
('USA', 'Dollar'),
('England', 'Pound'),
('Canada', 'CdnDlr'),
('Switzerland', 'SFranc'),
('Japan', 'Yen'),
('Italy', 'Euro'),
('France', 'Euro'),
('Germany', 'Euro'),
('Australia', 'ADollar'),
('Hong Kong', 'HKDollar'),
('Netherlands', 'Euro'),
('Belgium', 'Euro'),
('Austria', 'Euro'),
('Fiji', 'FDollar'),
('Russia', 'Ruble'),
('Romania', 'RLeu');

INSERT INTO job (job_code, job_grade, job_country, job_title, min_salary, max_salary) VALUES
('CEO', 1, 'USA', 'Chief Executive Officer', 130000, 250000),
('CFO', 1, 'USA', 'Chief Financial Officer', 85000, 140000),
('VP', 2, 'USA', 'Vice President', 80000, 130000),
('Dir', 2, 'USA', 'Director', 75000, 120000),
('Mngr', 3, 'USA', 'Manager', 60000, 100000),
('Mngr', 4, 'USA', 'Manager', 30000, 60000),
('Admin', 4, 'USA', 'Administrative Assistant', 35000, 55000),
('Admin', 5, 'USA', 'Administrative Assistant', 20000, 40000),
('Admin', 5, 'England', 'Administrative Assistant', 13400, 26800),
('PRel', 4, 'USA', 'Public Relations Rep.', 25000, 65000),
('Mktg', 3, 'USA', 'Marketing Analyst', 40000, 80000),
('Mktg', 4, 'USA', 'Marketing Analyst', 20000, 50000),
('Accnt', 4, 'USA', 'Accountant', 28000, 55000),
('Finan', 3, 'USA', 'Financial Analyst', 35000, 85000),
('Eng', 2, 'USA', 'Engineer', 70000, 110000),
('Eng', 3, 'USA', 'Engineer', 50000, 90000),
('Eng', 3, 'Japan', 'Engineer', 5400000, 9720000),
('Eng', 4, 'USA', 'Engineer', 30000, 65000),
('Eng', 4, 'England', 'Engineer', 20100, 43550),
('Eng', 5, 'USA', 'Engineer', 25000, 35000),
('Doc', 3, 'USA', 'Technical Writer', 38000, 60000),
('Doc', 5, 'USA', 'Technical Writer', 22000, 40000),
('Sales', 3, 'USA', 'Sales Co-ordinator', 40000, 70000),
('Sales', 3, 'England', 'Sales Co-ordinator', 26800, 46900),
('SRep', 4, 'USA', 'Sales Representative', 20000, 100000),
('SRep', 4, 'England', 'Sales Representative', 13400, 67000),
('SRep', 4, 'Canada', 'Sales Representative', 26400, 132000),
('SRep', 4, 'Switzerland', 'Sales Representative', 28000, 149000),
('SRep', 4, 'Japan', 'Sales Representative', 2160000, 10800000),
('SRep', 4, 'Italy', 'Sales Representative', 20000, 100000),
('SRep', 4, 'France', 'Sales Representative', 20000, 100000);

INSERT INTO department (dept_no, department, head_dept, mngr_no, budget, location, phone_no) VALUES
('000', 'Corporate Headquarters', NULL, 105, 1000000, 'Monterey', '(408) 555-1234'),
('100', 'Sales and Marketing', '000', 85, 2000000, 'San Francisco', '(415) 555-1234'),
('600', 'Engineering', '000', 2, 1100000, 'Monterey', '(408) 555-1234'),
('900', 'Finance', '000', 46, 400000, 'Monterey', '(408) 555-1234'),
('180', 'Marketing', '100', NULL, 1500000, 'San Francisco', '(415) 555-1234'),
('620', 'Software Products Div.', '600', NULL, 1200000, 'Monterey', '(408) 555-1234'),
('621', 'Software Development', '620', NULL, 400000, 'Monterey', '(408) 555-1234'),
('622', 'Quality Assurance', '620', 9, 300000, 'Monterey', '(408) 555-1234'),
('623', 'Customer Support', '620', 15, 650000, 'Monterey', '(408) 555-1234'),
('670', 'Consumer Electronics Div.', '600', 107, 1150000, 'Burlington, VT', '(802) 555-1234'),
('671', 'Research and Development', '670', 20, 460000, 'Burlington, VT', '(802) 555-1234'),
('672', 'Customer Services', '670', 94, 850000, 'Burlington, VT', '(802) 555-1234'),
('130', 'Field Office: East Coast', '100', 11, 500000, 'Boston', '(617) 555-1234'),
('140', 'Field Office: Canada', '100', 72, 500000, 'Toronto', '(416) 677-1000'),
('110', 'Pacific Rim Headquarters', '100', 34, 600000, 'Kuaui', '(808) 555-1234'),
('115', 'Field Office: Japan', '110', 118, 500000, 'Tokyo', '3 5350 0901'),
('116', 'Field Office: Singapore', '110', NULL, 300000, 'Singapore', '3 55 1234'),
('120', 'European Headquarters', '100', 36, 700000, 'London', '71 235-4400'),
('121', 'Field Office: Switzerland', '120', 141, 500000, 'Zurich', '1 211 7767'),
('123', 'Field Office: France', '120', 134, 400000, 'Cannes', '58 68 11 12'),
('125', 'Field Office: Italy', '120', 121, 400000, 'Milan', '2 430 39 39');

INSERT INTO employee (emp_no, first_name, last_name, phone_ext, hire_date, dept_no, job_code, job_grade, job_country, salary) VALUES
(2, 'Robert', 'Nelson', '250', '1988-12-28', '600', 'VP', 2, 'USA', 98000),
(4, 'Bruce', 'Young', '233', '1988-12-28', '621', 'Eng', 2, 'USA', 90000),
(5, 'Kim', 'Lambert', '22', '1989-02-06', '130', 'Eng', 2, 'USA', 95000),
(8, 'Leslie', 'Johnson', '410', '1989-04-05', '180', 'Mktg', 3, 'USA', 62000),
(9, 'Phil', 'Forest', '229', '1989-04-17', '622', 'Mngr', 3, 'USA', 72000),
(11, 'K. J.', 'Weston', '34', '1990-01-17', '130', 'SRep', 4, 'USA', 70000),
(12, 'Terri', 'Lee', '256', '1990-05-01', '000', 'Admin', 4, 'USA', 48000),
(14, 'Stewart', 'Hall', '227', '1990-06-04', '900', 'Finan', 3, 'USA', 62000),
(15, 'Katherine', 'Young', '231', '1990-06-14', '623', 'Mngr', 3, 'USA', 60000),
(20, 'Chris', 'Papadopoulos', '887', '1990-01-01', '671', 'Mngr', 3, 'USA', 80000),
(24, 'Pete', 'Fisher', '888', '1990-09-12', '671', 'Eng', 3, 'USA', 73000),
(28, 'Ann', 'Bennet', '5', '1991-02-01', '120', 'Admin', 5, 'England', 20000),
(29, 'Roger', 'De Souza', '288', '1991-02-18', '623', 'Eng', 3, 'USA', 62000),
(34, 'Janet', 'Baldwin', '2', '1991-03-21', '110', 'Sales', 3, 'USA', 55000),
(36, 'Roger', 'Reeves', '6', '1991-04-25', '120', 'Sales', 3, 'England', 30000),
(37, 'Willie', 'Stansbury', '7', '1991-04-25', '120', 'Eng', 4, 'England', 35000),
(44, 'Leslie', 'Phong', '216', '1991-06-03', '623', 'Eng', 4, 'USA', 50000),
(45, 'Ashok', 'Ramanathan', '209', '1991-08-01', '621', 'Eng', 3, 'USA', 72000),
(46, 'Walter', 'Steadman', '210', '1991-08-09', '900', 'CFO', 1, 'USA', 120000),
(52, 'Carol', 'Nordstrom', '420', '1991-10-02', '180', 'PRel', 4, 'USA', 41000),
(61, 'Luke', 'Leung', '3', '1992-02-18', '110', 'SRep', 4, 'USA', 60000),
(65, 'Sue Anne', 'O''Brien', '877', '1992-03-23', '670', 'Admin', 5, 'USA', 30000),
(71, 'Jennifer M.', 'Burbank', '289', '1992-04-15', '622', 'Eng', 3, 'USA', 51000),
(72, 'Claudia', 'Sutherland', NULL, '1992-04-20', '140', 'SRep', 4, 'Canada', 88000),
(83, 'Dana', 'Bishop', '290', '1992-06-01', '621', 'Eng', 3, 'USA', 60000),
(85, 'Mary S.', 'MacDonald', '477', '1992-06-01', '100', 'VP', 2, 'USA', 115000),
(94, 'Randy', 'Williams', '892', '1992-08-08', '672', 'Mngr', 4, 'USA', 54000),
(105, 'Oliver H.', 'Bender', '255', '1992-10-08', '000', 'CEO', 1, 'USA', 220000),
(107, 'Kevin', 'Cook', '894', '1993-02-01', '670', 'Dir', 2, 'USA', 115000),
(109, 'Kelly', 'Brown', '202', '1993-02-04', '600', 'Admin', 5, 'USA', 27000),
(110, 'Yuki', 'Ichida', '22', '1993-02-04', '115', 'Eng', 3, 'Japan', 6000000),
(113, 'Mary', 'Page', '845', '1993-04-12', '671', 'Eng', 4, 'USA', 48000),
(114, 'Bill', 'Parker', '247', '1993-06-01', '623', 'Eng', 5, 'USA', 35000),
(118, 'Takashi', 'Yamamoto', '23', '1993-07-01', '115', 'SRep', 4, 'Japan', 6800000),
(121, 'Roberto', 'Ferrari', '1', '1993-07-12', '125', 'SRep', 4, 'Italy', 30000),
(127, 'Michael', 'Yanowski', '492', '1993-08-09', '100', 'SRep', 4, 'USA', 40000),
(134, 'Jacques', 'Glon', NULL, '1993-08-23', '123', 'SRep', 4, 'France', 35000),
(136, 'Scott', 'Johnson', '265', '1993-09-13', '623', 'Doc', 3, 'USA', 60000),
(138, 'T.J.', 'Green', '218', '1993-11-01', '621', 'Eng', 4, 'USA', 36000),
(141, 'Pierre', 'Osborne', NULL, '1994-01-03', '121', 'SRep', 4, 'Switzerland', 110000),
(144, 'John', 'Montgomery', '820', '1994-03-30', '672', 'Eng', 5, 'USA', 35000),
(145, 'Mark', 'Guckenheimer', '221', '1994-05-02', '622', 'Eng', 5, 'USA', 32000);

INSERT INTO project (proj_id, proj_name, team_leader, product) VALUES
('VBASE', 'Video Database', 45, 'software'),
('DGPII', 'DigiPizza', 24, 'other'),
('GUIDE', 'AutoMap', 20, 'hardware'),
('MAPDB', 'MapBrowser port', 4, 'software'),
('HWRII', 'Translator upgrade', NULL, 'software'),
('MKTPR', 'Marketing project 3', 85, 'N/A');

INSERT INTO employee_project (emp_no, proj_id) VALUES
(144, 'DGPII'),
(113, 'DGPII'),
(24, 'DGPII'),
(8, 'VBASE'),
(136, 'VBASE'),
(15, 'VBASE'),
(71, 'VBASE'),
(145, 'VBASE'),
(44, 'VBASE'),
(4, 'VBASE'),
(83, 'VBASE'),
(138, 'VBASE'),
(45, 'VBASE'),
(20, 'GUIDE'),
(24, 'GUIDE'),
(113, 'GUIDE'),
(8, 'GUIDE'),
(4, 'MAPDB'),
(71, 'MAPDB'),
(46, 'MKTPR'),
(105, 'MKTPR'),
(12, 'MKTPR'),
(85, 'MKTPR'),
(110, 'MKTPR'),
(34, 'MKTPR'),
(8, 'MKTPR'),
(14, 'MKTPR'),
(52, 'MKTPR');

INSERT INTO proj_dept_budget (fiscal_year, proj_id, dept_no, projected_budget) VALUES
(1994, 'GUIDE', '100', 200000),
(1994, 'GUIDE', '671', 450000),
(1993, 'MAPDB', '621', 20000),
(1994, 'MAPDB', '621', 40000),
(1994, 'MAPDB', '622', 60000),
(1994, 'MAPDB', '671', 11000),
(1994, 'HWRII', '670', 20000),
(1994, 'HWRII', '621', 400000),
(1994, 'HWRII', '622', 100000),
(1994, 'MKTPR', '623', 80000),
(1994, 'MKTPR', '672', 100000),
(1994, 'MKTPR', '100', 1000000),
(1994, 'MKTPR', '110', 200000),
(1994, 'MKTPR', '000', 100000),
(1995, 'MKTPR', '623', 1200000),
(1995, 'MKTPR', '672', 800000),
(1995, 'MKTPR', '100', 2000000),
(1995, 'MKTPR', '110', 1200000),
(1994, 'VBASE', '621', 1900000),
(1995, 'VBASE', '621', 900000),
(1994, 'VBASE', '622', 400000),
(1994, 'VBASE', '100', 300000),
(1995, 'VBASE', '100', 1500000),
(1996, 'VBASE', '100', 150000);

INSERT INTO customer (cust_no, customer, contact_first, contact_last, phone_no, address_line1, address_line2, city, state_province, country, postal_code, on_hold) VALUES
(1001, 'Signature Design', 'Dale J.', 'Little', '(619) 530-2710', '15500 Pacific Heights Blvd.', NULL, 'San Diego', 'CA', 'USA', '92121', NULL),
(1002, 'Dallas Technologies', 'Glen', 'Brown', '(214) 960-2233', 'P. O. Box 47000', NULL, 'Dallas', 'TX', 'USA', '75205', NULL),
(1003, 'Buttle, Griffith and Co.', 'James', 'Buttle', '(617) 488-1864', '2300 Newbury Street', 'Suite 101', 'Boston', 'MA', 'USA', '02115', NULL),
(1004, 'Central Bank', 'Elizabeth', 'Brocket', '61 211 99 88', '66 Lloyd Street', NULL, 'Manchester', NULL, 'England', 'M2 3LA', NULL),
(1005, 'DT Systems, LTD.', 'Tai', 'Wu', '(852) 850 43 98', '400 Connaught Road', NULL, 'Central Hong Kong', NULL, 'Hong Kong', NULL, NULL),
(1006, 'DataServe International', 'Tomas', 'Bright', '(613) 229 3323', '2000 Carling Avenue', 'Suite 150', 'Ottawa', 'ON', 'Canada', 'K1V 9G1', NULL),
(1007, 'Mrs. Beauvais', NULL, 'Mrs. Beauvais', NULL, 'P.O. Box 22743', NULL, 'Pebble Beach', 'CA', 'USA', '93953', NULL),
(1008, 'Anini Vacation Rentals', 'Leilani', 'Briggs', '(808) 835-7605', '3320 Lawai Road', NULL, 'Lihue', 'HI', 'USA', '96766', NULL),
(1009, 'Max', 'Max', NULL, '22 01 23', '1 Emerald Cove', NULL, 'Turtle Island', NULL, 'Fiji', NULL, NULL),
(1010, 'MPM Corporation', 'Miwako', 'Miyamoto', '3 880 77 19', '2-64-7 Sasazuka', NULL, 'Tokyo', NULL, 'Japan', '150', NULL),
(1011, 'Dynamic Intelligence Corp', 'Victor', 'Granges', '01 221 16 50', 'Florhofgasse 10', NULL, 'Zurich', NULL, 'Switzerland', '8005', NULL),
(1012, '3D-Pad Corp.', 'Michelle', 'Roche', '1 43 60 61', '22 Place de la Concorde', NULL, 'Paris', NULL, 'France', '75008', NULL),
(1013, 'Lorenzi Export, Ltd.', 'Andreas', 'Lorenzi', '02 404 6284', 'Via Eugenia, 15', NULL, 'Milan', NULL, 'Italy', '20124', NULL),
(1014, 'Dyno Consulting', 'Greta', 'Hessels', '02 500 5940', 'Rue Royale 350', NULL, 'Brussels', NULL, 'Belgium', '1210', NULL),
(1015, 'GeoTech Inc.', 'K.M.', 'Neppelenbroek', '(070) 44 91 18', 'P.0.Box 702', NULL, 'Den Haag', NULL, 'Netherlands', '2514', NULL);

INSERT INTO sales (po_number, cust_no, sales_rep, order_status, order_date, ship_date, date_needed, paid, qty_ordered, total_value, discount, item_type) VALUES
('V91E0210', 1004, 11, 'shipped', '1991-03-04', '1991-03-05', NULL, 'y', 10, 5000, 0.1, 'hardware'),
('V92E0340', 1004, 11, 'shipped', '1992-10-15', '1992-10-16', '1992-10-17', 'y', 7, 70000, 0, 'hardware'),
('V92J1003', 1010, 61, 'shipped', '1992-07-26', '1992-08-04', '1992-09-15', 'y', 15, 2985, 0, 'software'),
('V93J2004', 1010, 118, 'shipped', '1993-10-30', '1993-12-02', '1993-11-15', 'y', 3, 210, 0, 'software'),
('V93J3100', 1010, 118, 'shipped', '1993-08-20', '1993-08-20', NULL, 'y', 16, 18000.4, 0.1, 'software'),
('V92F3004', 1012, 11, 'shipped', '1992-10-15', '1993-01-16', '1993-01-16', 'y', 3, 2000, 0, 'software'),
('V93F3088', 1012, 134, 'shipped', '1993-08-27', '1993-09-08', NULL, 'n', 10, 10000, 0, 'software'),
('V93F2030', 1012, 134, 'open', '1993-12-12', NULL, NULL, 'y', 15, 450000.49, 0, 'hardware'),
('V93F2051', 1012, 134, 'waiting', '1993-12-18', NULL, '1994-03-01', 'n', 1, 999.98, 0, 'software'),
('V93H0030', 1005, 118, 'open', '1993-12-12', NULL, '1994-01-01', 'y', 20, 5980, 0.2, 'software'),
('V94H0079', 1005, 61, 'open', '1994-02-13', NULL, '1994-04-20', 'n', 10, 9000, 0.05, 'software'),
('V9324200', 1001, 72, 'shipped', '1993-08-09', '1993-08-09', '1993-08-17', 'y', 1000, 560000, 0.2, 'hardware'),
('V9324320', 1001, 127, 'shipped', '1993-08-16', '1993-08-16', '1993-09-01', 'y', 1, 0, 1, 'software'),
('V9320630', 1001, 127, 'open', '1993-12-12', NULL, '1993-12-15', 'n', 3, 60000, 0.2, 'hardware'),
('V9420099', 1001, 127, 'open', '1994-01-17', NULL, '1994-06-01', 'n', 100, 3399.15, 0.15, 'software'),
('V9427029', 1001, 127, 'shipped', '1994-02-07', '1994-02-10', '1994-02-10', 'n', 17, 422210.97, 0, 'hardware'),
('V9333005', 1002, 11, 'shipped', '1993-02-03', '1993-03-03', NULL, 'y', 2, 600.5, 0, 'software'),
('V9333006', 1002, 11, 'shipped', '1993-04-27', '1993-05-02', '1993-05-02', 'n', 5, 20000, 0, 'other'),
('V9336100', 1002, 11, 'waiting', '1993-12-27', '1994-01-01', '1994-01-01', 'n', 150, 14850, 0.05, 'software'),
('V9346200', 1003, 11, 'waiting', '1993-12-31', NULL, '1994-01-24', 'n', 3, 0, 1, 'software'),
('V9345200', 1003, 11, 'shipped', '1993-11-11', '1993-12-02', '1993-12-01', 'y', 900, 27000, 0.3, 'software'),
('V9345139', 1003, 127, 'shipped', '1993-09-09', '1993-09-20', '1993-10-01', 'y', 20, 12582.12, 0.1, 'software'),
('V93C0120', 1006, 72, 'shipped', '1993-03-22', '1993-05-31', '1993-04-17', 'y', 1, 47.5, 0, 'other'),
('V93C0990', 1006, 72, 'shipped', '1993-08-09', '1993-09-02', NULL, 'y', 40, 399960.5, 0.1, 'hardware'),
('V9456220', 1007, 127, 'open', '1994-01-04', NULL, '1994-01-30', 'y', 1, 3999.99, 0, 'hardware'),
('V93S4702', 1011, 121, 'shipped', '1993-10-27', '1993-10-28', '1993-12-15', 'y', 4, 120000, 0, 'hardware'),
('V94S6400', 1011, 141, 'waiting', '1994-01-06', NULL, '1994-02-15', 'y', 20, 1980.72, 0.4, 'software'),
('V93H3009', 1008, 61, 'shipped', '1993-08-01', '1993-12-02', '1993-12-01', 'n', 3, 9000, 0.05, 'software'),
('V93H0500', 1008, 61, 'open', '1993-12-12', NULL, '1993-12-15', 'n', 3, 16000, 0.2, 'hardware'),
('V93F0020', 1009, 61, 'shipped', '1993-10-10', '1993-11-11', '1993-11-11', 'n', 1, 490.69, 0, 'software'),
('V93I4700', 1013, 121, 'open', '1993-10-27', NULL, '1993-12-15', 'n', 5, 2693, 0, 'hardware'),
('V93B1002', 1014, 134, 'shipped', '1993-09-20', '1993-09-21', '1993-09-25', 'y', 1, 100.02, 0, 'software'),
('V93N5822', 1015, 134, 'shipped', '1993-12-18', '1994-01-14', NULL, 'n', 2, 1500.0, 0, 'software');

ALTER TABLE job ADD FOREIGN KEY (job_country) REFERENCES country (country);
ALTER TABLE department ADD FOREIGN KEY (head_dept) REFERENCES department (dept_no);
ALTER TABLE department ADD FOREIGN KEY (mngr_no) REFERENCES employee (emp_no);
ALTER TABLE employee ADD FOREIGN KEY (dept_no) REFERENCES department (dept_no);
ALTER TABLE employee ADD FOREIGN KEY (job_code, job_grade, job_country) REFERENCES job (job_code, job_grade, job_country);
ALTER TABLE project ADD FOREIGN KEY (team_leader) REFERENCES employee (emp_no);
ALTER TABLE employee_project ADD FOREIGN KEY (emp_no) REFERENCES employee (emp_no);
ALTER TABLE employee_project ADD FOREIGN KEY (proj_id) REFERENCES project (proj_id);
ALTER TABLE proj_dept_budget ADD FOREIGN KEY (dept_no) REFERENCES department (dept_no);
ALTER TABLE proj_dept_budget ADD FOREIGN KEY (proj_id) REFERENCES project (proj_id);
ALTER TABLE customer ADD FOREIGN KEY (country) REFERENCES country (country);
ALTER TABLE sales ADD FOREIGN KEY (cust_no) REFERENCES customer (cust_no);
ALTER TABLE sales ADD FOREIGN KEY (sales_rep) REFERENCES employee (emp_no);
