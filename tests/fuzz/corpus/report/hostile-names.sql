UPDATE model SET name = 'm<script>[2J'; UPDATE hardware SET gpu_model = '</pre><img src=x>';
